package sabotage

import "errors"

// errNotBuilt is returned by Set in a build without the sabotage tag.
var errNotBuilt = errors.New("sabotage: this binary was built without the sabotage tag")
