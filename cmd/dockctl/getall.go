package main

// get all: kubectl's category of the objects a user runs, for dockctl the
// kinds of it that it has, listed as several kinds are (getSeveralKinds).

// categories are the resource categories get expands, each into its kinds
// in the order kubectl lists them (kubectl's all also holds replica sets,
// stateful sets, jobs…, which dockctl has not).
var categories = map[string][]string{"all": {kindPod, kindService, kindDeployment}}

// resourceKinds returns the kinds a resource argument of get names when it
// names several (a category), nil when it names one kind (objectArgs reads
// it).
func resourceKinds(arg string) []string {
	return categories[arg]
}
