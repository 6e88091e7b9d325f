package job

import (
	"slices"
	"strconv"
	"strings"
)

// An Indexed Job's completedIndexes and failedIndexes are sets of indexes
// written as Kubernetes writes them: increasing, comma-separated, runs of
// three or more as "first-last" ("1,3-5,7"; a run of two as "3,4").
type span struct{ first, last int }

type indexSet []span

// parseIndexes reads a status string, keeping the indexes below
// completions (a Job scaled down keeps only those) and skipping what does
// not parse, as Kubernetes' parseIndexesFromString does.
func parseIndexes(s string, completions int) indexSet {
	var out indexSet
	if s == "" {
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		bounds := strings.SplitN(part, "-", 2)
		first, err := strconv.Atoi(bounds[0])
		if err != nil || first < 0 {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(bounds) == 2 {
			if last, err = strconv.Atoi(bounds[1]); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		out = out.merge(indexSet{{first, last}})
	}
	return out
}

// with returns the set with the given indexes added.
func (s indexSet) with(ix ...int) indexSet {
	if len(ix) == 0 {
		return s
	}
	ix = slices.Clone(ix)
	slices.Sort(ix)
	add := make(indexSet, 0, len(ix))
	for _, i := range ix {
		add = append(add, span{i, i})
	}
	return s.merge(add)
}

// merge returns the union of two sets, adjacent runs joined.
func (s indexSet) merge(o indexSet) indexSet {
	all := make(indexSet, 0, len(s)+len(o))
	all = append(append(all, s...), o...)
	slices.SortFunc(all, func(a, b span) int { return a.first - b.first })
	var out indexSet
	for _, sp := range all {
		if n := len(out); n > 0 && sp.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, sp.last)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func (s indexSet) total() int {
	n := 0
	for _, sp := range s {
		n += sp.last - sp.first + 1
	}
	return n
}

func (s indexSet) has(i int) bool {
	k, _ := slices.BinarySearchFunc(s, i, func(sp span, i int) int {
		if sp.last < i {
			return -1
		}
		if sp.first > i {
			return 1
		}
		return 0
	})
	return k < len(s) && s[k].first <= i && i <= s[k].last
}

func (s indexSet) String() string {
	var b strings.Builder
	for _, sp := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.first))
		switch {
		case sp.last == sp.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(sp.last))
		case sp.last > sp.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sp.last))
		}
	}
	return b.String()
}

// firstPending returns up to count indexes below completions in none of
// the taken sets, lowest first.
func firstPending(count, completions int, taken indexSet) []int {
	var out []int
	next := 0
	for _, sp := range taken {
		for ; next < min(sp.first, completions) && len(out) < count; next++ {
			out = append(out, next)
		}
		next = max(next, sp.last+1)
	}
	for ; next < completions && len(out) < count; next++ {
		out = append(out, next)
	}
	return out
}
