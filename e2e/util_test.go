//go:build e2e

package e2e

import "regexp"

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
