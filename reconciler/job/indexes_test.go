package job

import (
	"reflect"
	"testing"
)

func TestIndexSetsAreWrittenAsKubernetesWritesThem(t *testing.T) {
	for _, tc := range []struct {
		prev        string
		add         []int
		completions int
		want        string
		total       int
	}{
		{"", nil, 10, "", 0},
		{"", []int{3}, 10, "3", 1},
		{"", []int{4, 3}, 10, "3,4", 2},
		{"", []int{1, 3, 4, 5, 7}, 10, "1,3-5,7", 5},
		{"1,3-5,7", []int{2, 6}, 10, "1-7", 7},
		{"0-2", []int{0, 1}, 10, "0-2", 3},
		{"0-9", nil, 5, "0-4", 5},        // completions lowered
		{"2,x,4-a,6", nil, 10, "2,6", 2}, // what does not parse is skipped
		{"8", []int{1}, 5, "1", 1},
	} {
		s := parseIndexes(tc.prev, tc.completions).with(tc.add...)
		if s.String() != tc.want || s.total() != tc.total {
			t.Errorf("%q + %v = %q (%d), want %q (%d)", tc.prev, tc.add, s.String(), s.total(), tc.want, tc.total)
		}
	}
}

func TestIndexSetMembership(t *testing.T) {
	s := parseIndexes("1,3-5,9", 10)
	for i, want := range []bool{false, true, false, true, true, true, false, false, false, true} {
		if s.has(i) != want {
			t.Errorf("has(%d) = %v", i, !want)
		}
	}
}

func TestFirstPendingIndexesSkipTakenOnes(t *testing.T) {
	for _, tc := range []struct {
		taken    string
		count, n int
		want     []int
	}{
		{"", 3, 5, []int{0, 1, 2}},
		{"0,2", 3, 5, []int{1, 3, 4}},
		{"0-4", 3, 5, nil},
		{"1-3", 10, 6, []int{0, 4, 5}},
		{"", 0, 5, nil},
	} {
		if got := firstPending(tc.count, tc.n, parseIndexes(tc.taken, tc.n)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("firstPending(%d, %d, %q) = %v, want %v", tc.count, tc.n, tc.taken, got, tc.want)
		}
	}
}
