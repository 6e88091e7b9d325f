package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newRunCommand is kubectl run NAME --image: kubectl makes one Pod
// labeled run=NAME. Pods are not objects dockctl stores on their own (a
// pod is a replica of a deployment), so run makes the nearest object that
// keeps such a pod running: a Deployment of one replica whose pods are
// labeled run=NAME, the container named NAME. A pod that must not be
// restarted (--restart=Never or OnFailure: a Pod, or a Job, in kubectl) has
// no such object, so it is refused rather than made into one that
// restarts it.
func newRunCommand(g *globalOptions) *cobra.Command {
	var (
		out     createOutput
		image   string
		port    int32
		restart string
		labels  map[string]string
		env     []string
	)
	cmd := &cobra.Command{
		Use:   "run NAME --image=image [--port=port] [--env=KEY=VALUE] [--labels=key=value,...] [--dry-run=client] [-o yaml] [-- COMMAND [args...]]",
		Short: "Run an image: a deployment of one replica (as kubectl run's pod, restarted when it exits)",
		Example: `  # Run nginx, listening on port 80
  dockctl run web --image=nginx --port=80

  # Print what it would store
  dockctl run web --image=nginx --dry-run=client -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "NAME is required for run")
			}
			if image == "" {
				return usageErrorf(cmd, "--image is required")
			}
			switch restart {
			case "Always":
			case "Never", "OnFailure":
				return fmt.Errorf("--restart=%s: a pod that is not restarted is not something dockctl runs (it runs pods as replicas of a deployment, restarted when they exit); use --restart=Always", restart)
			default:
				return fmt.Errorf("invalid restart policy: %s", restart)
			}
			name := args[0]
			l := labels
			if len(l) == 0 {
				l = map[string]string{"run": name}
			}
			d := deploymentObject(g, name, l, []string{image}, 1, port)
			c := &d.Spec.Template.Spec.Containers[0]
			c.Name = name
			if len(args) > 1 {
				c.Args = args[1:]
			}
			for _, e := range env {
				k, v, ok := cutEnv(e)
				if !ok {
					return fmt.Errorf("invalid env: %s", e)
				}
				c.Env = append(c.Env, k8sEnv(k, v))
			}
			return createObject(cmd, g, &out, kindDeployment, name, d)
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "the image of the container")
	cmd.Flags().Int32Var(&port, "port", -1, "the port the container exposes")
	cmd.Flags().StringVar(&restart, "restart", "Always", "Always only: Never and OnFailure (a pod not restarted) are refused")
	cmd.Flags().StringToStringVarP(&labels, "labels", "l", nil, "labels of the pods (default run=NAME)")
	cmd.Flags().StringArrayVar(&env, "env", nil, "an environment variable of the container (KEY=VALUE), repeatable")
	out.addFlags(cmd)
	return cmd
}
