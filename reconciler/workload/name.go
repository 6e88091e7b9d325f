package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// suffixAlphabet is apimachinery's rand.String alphabet: no vowels (no
// words), no confusable characters.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// SuffixLen is the length of a generated name's suffix, as GenerateName's.
const SuffixLen = 5

// maxPrefixLen keeps a generated name a DNS label (63 characters), as
// the API server truncates a generateName base.
const maxPrefixLen = 63 - SuffixLen - 1

// GenerateNames returns n new names OWNER-xxxxx, none in taken, derived
// from the owner's name: the same owner and taken names give the same
// names. The names are added to taken.
func GenerateNames(owner string, n int, taken map[string]bool) []string {
	prefix := owner
	if len(prefix) > maxPrefixLen {
		prefix = prefix[:maxPrefixLen]
	}
	var out []string
	for seq := 0; len(out) < n; seq++ {
		sum := sha256.Sum256([]byte(owner + "\x00" + strconv.Itoa(seq)))
		v := binary.BigEndian.Uint64(sum[:8])
		b := make([]byte, SuffixLen)
		for i := range b {
			b[i] = suffixAlphabet[v%uint64(len(suffixAlphabet))]
			v /= uint64(len(suffixAlphabet))
		}
		name := prefix + "-" + string(b)
		if taken[name] {
			continue
		}
		taken[name] = true
		out = append(out, name)
	}
	return out
}
