package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"lookup"}, {"lookup", "-n", "0", "localhost"}, {"lookup", "-x"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (usage)", args, code)
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote results: %q", args, out.String())
		}
	}
}

// localhost is answered from /etc/hosts by Go's resolver, so the test
// needs no DNS server.
func TestLookupPrintsOneResultPerLookup(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"lookup", "-n", "3", "localhost"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r.Name != "localhost" || r.Result != "ok" || r.Ms < 0 || r.Detail == "" {
			t.Errorf("result %+v, want localhost resolved", r)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d results, want 3", n)
	}
}
