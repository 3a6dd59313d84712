// Package appdigest is the per-application digest of a federated region's
// repair: a follower sends the digest of its copy of the remote registry
// (POST …/stream), and the remote answers with the applications whose
// digest differs from its own, in full, and the names of those it no
// longer has (httpapi's stream_repair.go, federation's stream.go).
//
// An application's digest is computed identically on both sides from the
// same fields of its instances, never from encoded bytes: the instance id
// and the fields by which a change is a change (status, overriddenStatus,
// lastDirtyTimestamp, lastUpdatedTimestamp: what Eureka's delta carries
// and what the follower's copy compares). The marker and zone metadata a
// follower adds to what it serves are not among them, and the follower
// digests its copy as the remote sent it. Each instance is hashed (64-bit
// FNV-1a, then a finalizer that spreads every bit), and an application's
// digest is the sum of its instances' hashes: independent of order, so
// neither side sorts, and a follower could keep it incrementally.
//
// On the wire a digest is text, one application a line, sorted by name:
//
//	NAME 0123456789abcdef
//
// (the name, a space, the digest in 16 hexadecimal digits), which the
// follower sends gzip-compressed: about 10 bytes per application.
package appdigest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/heureka/heureka/actors"
)

// Digest holds application digests by application name (upper case).
type Digest map[string]uint64

// MaxApps bounds the applications of a digest that Decode accepts.
const MaxApps = 1 << 20

// Instance returns the hash of one instance.
func Instance(in *actors.Instance) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	str := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		h ^= 0xff // a separator no name holds
		h *= prime
	}
	num := func(n int64) {
		u := uint64(n)
		for range 8 {
			h ^= u & 0xff
			h *= prime
			u >>= 8
		}
	}
	str(in.ID())
	str(status(in.Status))
	str(status(in.OverriddenStatus))
	num(in.LastDirtyTimestamp)
	num(in.LastUpdatedTimestamp)
	// splitmix64's finalizer: a sum of raw FNV hashes would keep their
	// low bits' weakness.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// status is s with Java's null (empty) read as UNKNOWN, as both decoders
// normalize it.
func status(s actors.Status) string {
	if s == "" {
		return string(actors.StatusUnknown)
	}
	return string(s)
}

// Add adds in to the digest of its application.
func (d Digest) Add(in *actors.Instance) { d[in.App] += Instance(in) }

// Encode returns d in its wire form.
func (d Digest) Encode() []byte {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	slices.Sort(names)
	b := make([]byte, 0, len(d)*24)
	for _, n := range names {
		b = append(b, n...)
		b = append(b, ' ')
		h := strconv.AppendUint(nil, d[n], 16)
		for range 16 - len(h) {
			b = append(b, '0')
		}
		b = append(b, h...)
		b = append(b, '\n')
	}
	return b
}

// errMalformed answers a digest that is not in the wire form.
var errMalformed = errors.New("appdigest: malformed digest")

// Decode reads a digest in its wire form, at most MaxApps applications.
func Decode(r io.Reader) (Digest, error) {
	d := Digest{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		name, hex, ok := strings.Cut(line, " ")
		if !ok || name == "" || len(hex) != 16 {
			return nil, fmt.Errorf("%w: line %q", errMalformed, line)
		}
		v, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %q", errMalformed, line)
		}
		if len(d) >= MaxApps {
			return nil, fmt.Errorf("%w: more than %d applications", errMalformed, MaxApps)
		}
		d[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("appdigest: reading: %w", err)
	}
	return d, nil
}
