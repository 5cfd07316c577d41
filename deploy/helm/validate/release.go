package main

// The references between a release's objects, which decoding each alone cannot see: a typo in a
// label or a port name decodes well and leaves a Service with no endpoints or a probe that always
// fails.

import (
	"fmt"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// workload is a Deployment, StatefulSet or Job: its name and pod template.
type workload struct {
	kind, name string
	template   corev1.PodTemplateSpec
}

func describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if m, ok := obj.(metav1.Object); ok {
		return kind + "/" + m.GetName()
	}
	return kind
}

func checkRelease(objects []decoded) []string {
	var problems []string
	add := func(obj runtime.Object, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", describe(obj), fmt.Sprintf(format, args...)))
	}
	var workloads []workload
	services := map[string]*corev1.Service{}
	deployments := map[string]bool{}
	secrets := map[string]*corev1.Secret{}
	configMaps := map[string]*corev1.ConfigMap{}
	seen := map[string]bool{}
	for _, d := range objects {
		meta, ok := d.obj.(metav1.Object)
		if !ok {
			add(d.obj, "has no object metadata")
			continue
		}
		key := describe(d.obj)
		if seen[key] {
			add(d.obj, "rendered twice")
		}
		seen[key] = true
		for _, msg := range validation.IsDNS1123Subdomain(meta.GetName()) {
			add(d.obj, "name %q: %s", meta.GetName(), msg)
		}
		for _, e := range metav1validation.ValidateLabels(meta.GetLabels(), field.NewPath("metadata", "labels")) {
			add(d.obj, "%v", e)
		}
		switch o := d.obj.(type) {
		case *appsv1.Deployment:
			workloads = append(workloads, workload{"Deployment", o.Name, o.Spec.Template})
			deployments[o.Name] = true
			problems = append(problems, selectsTemplate(o, o.Spec.Selector, o.Spec.Template)...)
		case *appsv1.StatefulSet:
			workloads = append(workloads, workload{"StatefulSet", o.Name, o.Spec.Template})
			problems = append(problems, selectsTemplate(o, o.Spec.Selector, o.Spec.Template)...)
		case *batchv1.Job:
			// No selector to check: the Job controller labels its pods itself.
			workloads = append(workloads, workload{"Job", o.Name, o.Spec.Template})
		case *corev1.Service:
			services[o.Name] = o
			for _, msg := range validation.IsDNS1035Label(o.Name) {
				add(o, "a Service's name is a DNS label: %s", msg)
			}
		case *corev1.Secret:
			secrets[o.Name] = o
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		}
	}
	for _, w := range workloads {
		problems = append(problems, checkPod(w, secrets, configMaps)...)
	}
	for _, d := range objects {
		switch o := d.obj.(type) {
		case *corev1.Service:
			problems = append(problems, checkService(o, workloads)...)
		case *policyv1.PodDisruptionBudget:
			if n := len(matching(o.Spec.Selector, workloads)); n != 1 {
				add(o, "its selector matches %d workloads' pods, not 1", n)
			}
			if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
				add(o, "needs exactly one of minAvailable and maxUnavailable")
			}
		case *kedav1alpha1.ScaledObject:
			problems = append(problems, checkScaledObject(o, deployments)...)
		case *monitoringv1.ServiceMonitor:
			problems = append(problems, checkServiceMonitor(o, services)...)
		case *networkingv1.Ingress:
			problems = append(problems, checkIngress(o, services)...)
		}
	}
	return problems
}

func selectsTemplate(obj runtime.Object, selector *metav1.LabelSelector, template corev1.PodTemplateSpec) []string {
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return []string{fmt.Sprintf("%s: selector: %v", describe(obj), err)}
	}
	if s.Empty() || !s.Matches(labels.Set(template.Labels)) {
		return []string{fmt.Sprintf("%s: selector %s does not match its pod template's labels %v", describe(obj), s, template.Labels)}
	}
	return nil
}

func matching(selector *metav1.LabelSelector, workloads []workload) []workload {
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || s.Empty() {
		return nil
	}
	var found []workload
	for _, w := range workloads {
		if s.Matches(labels.Set(w.template.Labels)) {
			found = append(found, w)
		}
	}
	return found
}

// checkPod: probes name ports the container has, mounts name volumes the pod has, environment taken
// from a Secret or ConfigMap of the release names a key it holds.
func checkPod(w workload, secrets map[string]*corev1.Secret, configMaps map[string]*corev1.ConfigMap) []string {
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s/%s: %s", w.kind, w.name, fmt.Sprintf(format, args...)))
	}
	volumes := map[string]bool{}
	for _, v := range w.template.Spec.Volumes {
		volumes[v.Name] = true
	}
	if len(w.template.Spec.Containers) == 0 {
		add("has no containers")
	}
	all := append(append([]corev1.Container{}, w.template.Spec.InitContainers...), w.template.Spec.Containers...)
	for _, c := range all {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				add("container %s mounts volume %q, which the pod does not have", c.Name, m.Name)
			}
		}
		for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if probe == nil || probe.HTTPGet == nil {
				continue
			}
			if !containerHasPort(c, probe.HTTPGet.Port) {
				add("container %s: %s probe on port %s, which the container does not declare", c.Name, name, probe.HTTPGet.Port.String())
			}
			if !strings.HasPrefix(probe.HTTPGet.Path, "/") {
				add("container %s: %s probe path %q does not start with /", c.Name, name, probe.HTTPGet.Path)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				if s, ok := secrets[ref.Name]; ok && !hasKey(s.Data, s.StringData, ref.Key) {
					add("container %s: %s reads key %q of Secret %s, which has no such key", c.Name, e.Name, ref.Key, ref.Name)
				}
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				if m, ok := configMaps[ref.Name]; ok {
					if _, has := m.Data[ref.Key]; !has {
						add("container %s: %s reads key %q of ConfigMap %s, which has no such key", c.Name, e.Name, ref.Key, ref.Name)
					}
				}
			}
		}
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				if _, ok := configMaps[from.ConfigMapRef.Name]; !ok && (from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional) {
					add("container %s: envFrom names ConfigMap %s, which the release does not have", c.Name, from.ConfigMapRef.Name)
				}
			}
		}
	}
	return problems
}

func hasKey(data map[string][]byte, stringData map[string]string, key string) bool {
	if _, ok := data[key]; ok {
		return true
	}
	_, ok := stringData[key]
	return ok
}

func containerHasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}

func checkService(s *corev1.Service, workloads []workload) []string {
	var problems []string
	pods := matching(&metav1.LabelSelector{MatchLabels: s.Spec.Selector}, workloads)
	if len(pods) == 0 {
		return []string{fmt.Sprintf("Service/%s: selector %v matches no workload's pods", s.Name, s.Spec.Selector)}
	}
	for _, p := range s.Spec.Ports {
		for _, w := range pods {
			found := false
			for _, c := range w.template.Spec.Containers {
				if containerHasPort(c, p.TargetPort) {
					found = true
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("Service/%s: port %s targets %s, which %s/%s does not declare", s.Name, p.Name, p.TargetPort.String(), w.kind, w.name))
			}
		}
	}
	return problems
}

func checkScaledObject(o *kedav1alpha1.ScaledObject, deployments map[string]bool) []string {
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("ScaledObject/%s: %s", o.Name, fmt.Sprintf(format, args...)))
	}
	if o.Spec.ScaleTargetRef == nil {
		add("has no scaleTargetRef")
	} else {
		ref := o.Spec.ScaleTargetRef
		if (ref.Kind != "" && ref.Kind != "Deployment") || !deployments[ref.Name] {
			add("scaleTargetRef %s/%s is not a Deployment of the release", ref.Kind, ref.Name)
		}
	}
	if len(o.Spec.Triggers) == 0 {
		add("has no triggers")
	}
	if o.Spec.MinReplicaCount != nil && o.Spec.MaxReplicaCount != nil && *o.Spec.MinReplicaCount > *o.Spec.MaxReplicaCount {
		add("minReplicaCount %d is above maxReplicaCount %d", *o.Spec.MinReplicaCount, *o.Spec.MaxReplicaCount)
	}
	for i, t := range o.Spec.Triggers {
		if t.Type != "prometheus" {
			continue
		}
		// What KEDA's Prometheus scaler refuses at its start.
		for _, key := range []string{"serverAddress", "query", "threshold"} {
			if strings.TrimSpace(t.Metadata[key]) == "" {
				add("trigger %d (%s): metadata.%s is required", i, t.Name, key)
			}
		}
		for _, key := range []string{"threshold", "activationThreshold"} {
			if v, ok := t.Metadata[key]; ok && v != "" {
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					add("trigger %d (%s): metadata.%s %q is not a number", i, t.Name, key, v)
				}
			}
		}
	}
	return problems
}

func checkServiceMonitor(m *monitoringv1.ServiceMonitor, services map[string]*corev1.Service) []string {
	s, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
	if err != nil {
		return []string{fmt.Sprintf("ServiceMonitor/%s: selector: %v", m.Name, err)}
	}
	var problems []string
	ports := map[string]bool{}
	matched := 0
	for _, svc := range services {
		if s.Empty() || !s.Matches(labels.Set(svc.Labels)) {
			continue
		}
		matched++
		for _, p := range svc.Spec.Ports {
			ports[p.Name] = true
		}
	}
	if matched == 0 {
		problems = append(problems, fmt.Sprintf("ServiceMonitor/%s: selector %s matches no Service of the release", m.Name, s))
	}
	for _, e := range m.Spec.Endpoints {
		if e.Port != "" && !ports[e.Port] {
			problems = append(problems, fmt.Sprintf("ServiceMonitor/%s: endpoint port %q is no port of the Services it selects", m.Name, e.Port))
		}
	}
	return problems
}

func checkIngress(in *networkingv1.Ingress, services map[string]*corev1.Service) []string {
	var problems []string
	check := func(b *networkingv1.IngressServiceBackend) {
		if b == nil {
			return
		}
		svc, ok := services[b.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("Ingress/%s: backend Service %s is not in the release", in.Name, b.Name))
			return
		}
		for _, p := range svc.Spec.Ports {
			if (b.Port.Name != "" && p.Name == b.Port.Name) || (b.Port.Name == "" && p.Port == b.Port.Number) {
				return
			}
		}
		problems = append(problems, fmt.Sprintf("Ingress/%s: Service %s has no port %s%d", in.Name, b.Name, b.Port.Name, b.Port.Number))
	}
	if in.Spec.DefaultBackend != nil {
		check(in.Spec.DefaultBackend.Service)
	}
	for _, r := range in.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			check(p.Backend.Service)
		}
	}
	return problems
}
