package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
)

// What `wait --for` awaits, parsed and judged as kubectl's wait
// (k8s.io/kubectl/pkg/cmd/wait) does, on the object `get -o json` prints.

// waitCondition is --for: delete, condition=TYPE[=VALUE] (True by
// default), or jsonpath=EXPR[=VALUE] (any value when none is given).
type waitCondition struct {
	delete bool
	typ    string // condition type(s), comma-separated: any of them
	value  string // the condition's status, compared case-insensitively
	// jsonPath is the jsonpath form's expression, jsonValue the value it
	// must print ("" for any).
	jsonPath  *jsonpath.JSONPath
	jsonValue string
}

// forForms are what --for takes.
const forForms = "delete, condition=TYPE[=VALUE] or jsonpath='{EXPR}'[=VALUE]"

func parseWaitFor(s string) (waitCondition, error) {
	if strings.EqualFold(s, "delete") {
		return waitCondition{delete: true}, nil
	}
	if rest, ok := strings.CutPrefix(s, "jsonpath="); ok {
		return parseJSONPathFor(rest)
	}
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok || rest == "" {
		return waitCondition{}, fmt.Errorf("unrecognized condition: %q (expected %s)", s, forForms)
	}
	typ, value, hasValue := strings.Cut(rest, "=")
	if typ == "" {
		return waitCondition{}, fmt.Errorf("unrecognized condition: %q (expected %s)", s, forForms)
	}
	if !hasValue {
		value = "True"
	}
	return waitCondition{typ: typ, value: value}, nil
}

// parseJSONPathFor reads EXPR[=VALUE] as kubectl does: split on single
// '=' (a filter's '==' stays whole), EXPR relaxed as get's custom columns
// ({.a.b}, .a.b, a.b), VALUE stripped of the quotes a shell left.
func parseJSONPathFor(in string) (waitCondition, error) {
	parts := splitJSONPathInput(in)
	if len(parts) > 2 {
		return waitCondition{}, errors.New("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'")
	}
	expr, err := relaxedJSONPath(parts[0])
	if err != nil {
		return waitCondition{}, err
	}
	c := waitCondition{}
	if len(parts) == 2 {
		if c.jsonValue = strings.Trim(parts[1], `'"`); c.jsonValue == "" {
			return waitCondition{}, errors.New("jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3")
		}
	}
	if expr == "" {
		return waitCondition{}, errors.New("jsonpath expression cannot be empty")
	}
	c.jsonPath = jsonpath.New("wait").AllowMissingKeys(true)
	if err := c.jsonPath.Parse(expr); err != nil {
		return waitCondition{}, err
	}
	return c, nil
}

// splitJSONPathInput splits on each single '='; "==" is kept, as in a
// filter ({.status.conditions[?(@.type=="Ready")].status}=True).
func splitJSONPathInput(in string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(in); i++ {
		switch {
		case in[i] == '=' && i+1 < len(in) && in[i+1] == '=':
			cur.WriteString("==")
			i++
		case in[i] == '=':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(in[i])
		}
	}
	return append(out, cur.String())
}

// met judges an object, as JSON decodes it (genericObjects), against a
// condition or jsonpath wait. An error (a path that finds a list or
// several values) ends the wait, as kubectl's.
func (c waitCondition) met(obj map[string]any) (bool, error) {
	if c.jsonPath != nil {
		return c.jsonPathMet(obj)
	}
	return c.conditionMet(obj), nil
}

// conditionMet looks for the first of status.conditions whose type is
// one of c's and says whether its status is c's, unless it was judged for
// an older metadata.generation than the object's (observedGeneration of
// the condition, else of the status): a deployment's Available of the
// spec before an apply says nothing about the new one.
func (c waitCondition) conditionMet(obj map[string]any) bool {
	conds, found, err := unstructured.NestedSlice(obj, "status", "conditions")
	if err != nil || !found {
		return false
	}
	types := strings.Split(c.typ, ",")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		typ, found, err := unstructured.NestedString(cond, "type")
		if !found || err != nil || !containsFold(types, typ) {
			continue
		}
		status, found, err := unstructured.NestedString(cond, "status")
		if !found || err != nil {
			continue
		}
		if gen, found, _ := unstructured.NestedInt64(obj, "metadata", "generation"); found {
			observed, found, _ := unstructured.NestedInt64(cond, "observedGeneration")
			if !found {
				observed, found, _ = unstructured.NestedInt64(obj, "status", "observedGeneration")
			}
			if found && observed < gen {
				return false
			}
		}
		return strings.EqualFold(status, c.value)
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// jsonPathMet: the path must find one value (a missing one is not met
// yet); with a value to compare, it must print as that value (both
// trimmed), and may not be an object or a list.
func (c waitCondition) jsonPathMet(obj map[string]any) (bool, error) {
	results, err := c.jsonPath.FindResults(obj)
	if err != nil {
		return false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return false, nil
	}
	if len(results) > 1 {
		return false, errors.New("given jsonpath expression matches more than one list")
	}
	if len(results[0]) > 1 {
		return false, errors.New("given jsonpath expression matches more than one value")
	}
	if c.jsonValue == "" {
		return true, nil
	}
	return compareJSONPathResult(results[0][0], c.jsonValue)
}

func compareJSONPathResult(v reflect.Value, want string) (bool, error) {
	switch v.Interface().(type) {
	case map[string]any, []any:
		return false, errors.New("jsonpath leads to a nested object or list which is not supported")
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v.Interface())) == strings.TrimSpace(want), nil
}
