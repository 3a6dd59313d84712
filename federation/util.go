package federation

import (
	"slices"
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

func sortStrings(s []string) { slices.Sort(s) }

func sortStatus(s []RegionStatus) {
	slices.SortFunc(s, func(a, b RegionStatus) int { return strings.Compare(a.Name, b.Name) })
}
