package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/manifests"
)

// create service clusterip|nodeport|loadbalancer|externalname is
// kubectl's: the Service its generator builds (labels and selector
// app=NAME, a port named PORT-TARGET per --tcp), stored through
// createObject as apply -f of it would be, so what the manifests refuse
// (an ExternalName Service: docs/manifests.md) is refused here too.

// serviceFlags are kubectl create service's flags.
type serviceFlags struct {
	tcp          []string
	clusterIP    string
	nodePort     int
	externalName string
}

func newCreateServiceCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service (clusterip|nodeport|loadbalancer|externalname) NAME [flags]",
		Aliases: []string{"svc"},
		Short:   "Create a Service: clusterip, nodeport, loadbalancer or externalname",
		Example: `  # A ClusterIP Service on port 80, to its pods' port 8080 (pods labeled app=web)
  dockctl create service clusterip web --tcp=80:8080

  # A headless Service
  dockctl create service clusterip db --clusterip=None

  # Published on host port 30080
  dockctl create service nodeport web --tcp=80:8080 --node-port=30080`,
		RunE: subcommandsOnly(false),
	}
	for _, t := range []struct {
		use, short string
		typ        corev1.ServiceType
		example    string
	}{
		{"clusterip NAME [--tcp=<port>:<targetPort>] [--clusterip=None] [--dry-run=client] [-o yaml]",
			"Create a ClusterIP Service", corev1.ServiceTypeClusterIP,
			"  # A ClusterIP Service on port 5678, to its pods' port 8080\n  dockctl create service clusterip my-cs --tcp=5678:8080\n\n  # A headless Service\n  dockctl create service clusterip my-cs --clusterip=\"None\""},
		{"nodeport NAME [--tcp=port:targetPort] [--node-port=N] [--dry-run=client] [-o yaml]",
			"Create a NodePort Service (published on a host port)", corev1.ServiceTypeNodePort,
			"  # A NodePort Service\n  dockctl create service nodeport my-ns --tcp=5678:8080"},
		{"loadbalancer NAME [--tcp=port:targetPort] [--dry-run=client] [-o yaml]",
			"Create a LoadBalancer Service (published on a host port)", corev1.ServiceTypeLoadBalancer,
			"  # A LoadBalancer Service\n  dockctl create service loadbalancer my-lbs --tcp=5678:8080"},
		{"externalname NAME --external-name=external.name [--dry-run=client] [-o yaml]",
			"Create an ExternalName Service (refused as a manifest of one is: dockctl's DNS does not alias external names)", corev1.ServiceTypeExternalName,
			"  # An ExternalName Service\n  dockctl create service externalname my-ns --external-name bar.com"},
	} {
		var (
			f   serviceFlags
			out createOutput
		)
		typ := t.typ
		sub := &cobra.Command{
			Use:     t.use,
			Short:   t.short,
			Example: t.example,
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) != 1 {
					return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args))
				}
				svc, err := serviceObject(g, args[0], typ, f)
				if err != nil {
					return err
				}
				return createObject(cmd, g, &out, kindService, args[0], svc)
			},
		}
		switch typ {
		case corev1.ServiceTypeExternalName:
			sub.Flags().StringVar(&f.externalName, "external-name", "", "External name of service")
			_ = sub.MarkFlagRequired("external-name")
			sub.Flags().StringSliceVar(&f.tcp, "tcp", nil, "Port pairs can be specified as '<port>:<targetPort>'.")
		default:
			sub.Flags().StringSliceVar(&f.tcp, "tcp", nil, "Port pairs can be specified as '<port>:<targetPort>'.")
		}
		switch typ {
		case corev1.ServiceTypeClusterIP:
			sub.Flags().StringVar(&f.clusterIP, "clusterip", "", "Assign your own ClusterIP or set to 'None' for a 'headless' service (no loadbalancing).")
		case corev1.ServiceTypeNodePort:
			sub.Flags().IntVar(&f.nodePort, "node-port", 0, fmt.Sprintf("Port used to expose the service on each node in a cluster (%d-%d; 0: allocated).", manifests.NodePortMin, manifests.NodePortMax))
		}
		out.addFlags(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// serviceObject is kubectl's ServiceOptions.createService, with its
// validation's words.
func serviceObject(g *globalOptions, name string, typ corev1.ServiceType, f serviceFlags) (*corev1.Service, error) {
	if len(f.tcp) == 0 && typ != corev1.ServiceTypeExternalName && f.clusterIP != corev1.ClusterIPNone {
		return nil, errors.New("at least one tcp port specifier must be provided")
	}
	if typ == corev1.ServiceTypeExternalName {
		if errs := validation.IsDNS1123Subdomain(f.externalName); len(errs) != 0 {
			return nil, fmt.Errorf("invalid service external name %s", f.externalName)
		}
	}
	labels := map[string]string{"app": name}
	var ports []corev1.ServicePort
	for _, s := range f.tcp {
		port, target, err := parseServicePorts(s)
		if err != nil {
			return nil, err
		}
		ports = append(ports, corev1.ServicePort{
			Name: strings.ReplaceAll(s, ":", "-"), Port: port, TargetPort: target,
			Protocol: corev1.ProtocolTCP, NodePort: int32(f.nodePort),
		})
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: g.objectMeta(name, labels),
		Spec: corev1.ServiceSpec{Type: typ, Selector: labels, Ports: ports,
			ExternalName: f.externalName, ClusterIP: f.clusterIP},
	}
	return svc, nil
}

// parseServicePorts is kubectl's parsePorts: PORT[:TARGET], TARGET a
// number or a port name (PORT alone: TARGET is PORT).
func parseServicePorts(s string) (int32, intstr.IntOrString, error) {
	portS, targetS, hasTarget := strings.Cut(s, ":")
	port, err := strconv.Atoi(portS)
	if err != nil || port < 1 || port > 65535 {
		return 0, intstr.IntOrString{}, fmt.Errorf("invalid port %q: must be a number in 1-65535", portS)
	}
	if !hasTarget {
		return int32(port), intstr.FromInt32(int32(port)), nil
	}
	if n, err := strconv.Atoi(targetS); err == nil {
		if errs := validation.IsValidPortNum(n); len(errs) != 0 {
			return 0, intstr.IntOrString{}, errors.New(strings.Join(errs, ","))
		}
		return int32(port), intstr.FromInt32(int32(n)), nil
	}
	if errs := validation.IsValidPortName(targetS); len(errs) != 0 {
		return 0, intstr.IntOrString{}, errors.New(strings.Join(errs, ","))
	}
	return int32(port), intstr.FromString(targetS), nil
}
