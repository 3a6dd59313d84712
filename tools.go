//go:build tools

// Package heureka pins the modules the project's packages use while they are
// being built, so that concurrent work does not race on go.mod.
package heureka

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/benbjohnson/immutable"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/hudl/fargo"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "github.com/vmihailenco/msgpack/v5"
	_ "go.uber.org/goleak"
	_ "go.yaml.in/yaml/v3"
)
