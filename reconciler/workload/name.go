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

// MaxGenerateNameLen is apimachinery's maxGeneratedNameLength: the API
// server truncates a generateName base (its trailing "-" included) to it,
// so that base and suffix make a DNS label of at most 63 characters.
const MaxGenerateNameLen = 63 - SuffixLen

// Suffix spells v in SuffixLen characters of the suffix alphabet, as a
// generated name's suffix: callers derive v from what makes the name
// theirs (a hash), so the same inputs give the same suffix.
func Suffix(v uint64) string {
	b := make([]byte, SuffixLen)
	for i := range b {
		b[i] = suffixAlphabet[v%uint64(len(suffixAlphabet))]
		v /= uint64(len(suffixAlphabet))
	}
	return string(b)
}

// GenerateNames returns n new names OWNER-xxxxx, none in taken, derived
// from the owner's name: the same owner and taken names give the same
// names. The names are added to taken.
func GenerateNames(owner string, n int, taken map[string]bool) []string {
	prefix := owner
	if len(prefix) > MaxGenerateNameLen-1 {
		prefix = prefix[:MaxGenerateNameLen-1]
	}
	var out []string
	for seq := 0; len(out) < n; seq++ {
		sum := sha256.Sum256([]byte(owner + "\x00" + strconv.Itoa(seq)))
		name := prefix + "-" + Suffix(binary.BigEndian.Uint64(sum[:8]))
		if taken[name] {
			continue
		}
		taken[name] = true
		out = append(out, name)
	}
	return out
}
