package main

import (
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newRunCommand is kubectl run NAME --image: kubectl makes one Pod
// labeled run=NAME, the container named NAME. With --restart=Never or
// OnFailure it is that Pod, stored and run once by the workload
// controller with its restartPolicy (docs/design.md §17.1). With Always
// (the default) dockctl makes the nearest object that keeps such a pod
// running across controller restarts and container removals: a Deployment
// of one replica whose pods are labeled run=NAME.
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
		Short: "Run an image: a deployment of one replica (--restart=Always, the default: restarted whenever it exits), or a pod (--restart=Never: run once; OnFailure: restarted until it succeeds)",
		Example: `  # Run nginx, listening on port 80
  dockctl run web --image=nginx --port=80

  # Run a pod once, not restarted when it exits
  dockctl run once --image=busybox --restart=Never -- echo hello

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
			case "Always", "Never", "OnFailure":
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
			if restart != "Always" {
				pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: g.objectMeta(name, l),
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicy(restart), Containers: []corev1.Container{*c}}}
				return createObject(cmd, g, &out, kindPod, name, pod)
			}
			return createObject(cmd, g, &out, kindDeployment, name, d)
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "the image of the container")
	cmd.Flags().Int32Var(&port, "port", -1, "the port the container exposes")
	cmd.Flags().StringVar(&restart, "restart", "Always", "Always: a deployment of one replica; Never or OnFailure: a Pod with that restartPolicy")
	cmd.Flags().StringToStringVarP(&labels, "labels", "l", nil, "labels of the pods (default run=NAME)")
	cmd.Flags().StringArrayVar(&env, "env", nil, "an environment variable of the container (KEY=VALUE), repeatable")
	out.addFlags(cmd)
	return cmd
}
