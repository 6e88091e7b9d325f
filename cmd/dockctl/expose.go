package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
)

// newExposeCommand is kubectl expose deployment: a Service selecting the
// deployment's pods (its spec.selector.matchLabels), labeled as the
// deployment, its ports --port's, else the pod template's container ports.
func newExposeCommand(g *globalOptions) *cobra.Command {
	var (
		out                         createOutput
		port, targetPort            string
		typ, name, protocol, extIPs string
	)
	cmd := deploymentCommand("expose deployment NAME [--port=port] [--target-port=number-or-name] [--type=ClusterIP|NodePort|LoadBalancer] [--name=name] [--protocol=TCP|UDP]",
		"Create a Service for a deployment", func(cmd *cobra.Command, dep string) error {
			st, err := g.readStore()
			if err != nil {
				return err
			}
			rec, err := st.Get(g.namespace, dep)
			if err != nil {
				return notFound(g, dep, err)
			}
			svc, err := exposeService(g, &rec.Deployment, exposeFlags{name: name, port: port, targetPort: targetPort, typ: typ, protocol: protocol, externalIP: extIPs})
			if err != nil {
				return err
			}
			return createObject(cmd, g, &out, kindService, svc.Name, svc)
		})
	cmd.Example = `  # A Service on port 80 for deployment web's port 8080
  dockctl expose deployment web --port=80 --target-port=8080

  # Published on the host, as a LoadBalancer Service is
  dockctl expose deployment web --port=8080 --type=LoadBalancer`
	cmd.Flags().StringVar(&port, "port", "", "the port the Service serves on (default: the containers' ports)")
	cmd.Flags().StringVar(&targetPort, "target-port", "", "the container port (a number or a port name) traffic goes to (default: --port)")
	cmd.Flags().StringVar(&typ, "type", "", "ClusterIP (default), NodePort or LoadBalancer")
	cmd.Flags().StringVar(&name, "name", "", "the Service's name (default: the deployment's)")
	cmd.Flags().StringVar(&protocol, "protocol", "", "TCP (default) or UDP")
	cmd.Flags().StringVar(&extIPs, "external-ip", "", "an external IP address of the Service")
	out.addFlags(cmd)
	return cmd
}

type exposeFlags struct {
	name, port, targetPort, typ, protocol, externalIP string
}

// exposeService is kubectl's service generator for a deployment.
func exposeService(g *globalOptions, d *manifests.Deployment, f exposeFlags) (*corev1.Service, error) {
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		return nil, fmt.Errorf("couldn't retrieve selectors via --selector flag or introspection: the deployment has no spec.selector.matchLabels")
	}
	name := f.name
	if name == "" {
		name = d.Metadata.Name
	}
	protocol := corev1.Protocol(f.protocol)
	if protocol == "" {
		protocol = corev1.ProtocolTCP
	}
	var ports []corev1.ServicePort
	if f.port != "" {
		p, err := strconv.ParseInt(f.port, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid --port %q: %w", f.port, err)
		}
		ports = append(ports, corev1.ServicePort{Port: int32(p), Protocol: protocol})
	} else {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, cp := range c.Ports {
				pr := corev1.Protocol(cp.Protocol)
				if f.protocol != "" || pr == "" {
					pr = protocol
				}
				ports = append(ports, corev1.ServicePort{Port: cp.ContainerPort, Protocol: pr})
			}
		}
		if len(ports) == 0 {
			return nil, fmt.Errorf("couldn't find port via --port flag or introspection")
		}
	}
	for i := range ports {
		// kubectl names the ports when there are several.
		if len(ports) > 1 {
			ports[i].Name = "port-" + strconv.Itoa(i+1)
		}
		switch {
		case f.targetPort != "":
			ports[i].TargetPort = intstr.Parse(f.targetPort)
		default:
			ports[i].TargetPort = intstr.FromInt32(ports[i].Port)
		}
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: g.objectMeta(name, d.Metadata.Labels),
		Spec:       corev1.ServiceSpec{Ports: ports, Selector: d.Spec.Selector.MatchLabels, Type: corev1.ServiceType(f.typ)},
	}
	if f.externalIP != "" {
		svc.Spec.ExternalIPs = []string{f.externalIP}
	}
	return svc, nil
}
