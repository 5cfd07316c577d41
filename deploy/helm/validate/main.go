// Command validate reads the chart's rendered manifests (helm template's output) and decodes every
// object strictly against the API types the cluster would: Kubernetes' core, apps, batch, policy,
// networking and autoscaling groups, KEDA's ScaledObject and prometheus-operator's ServiceMonitor.
// An unknown or misspelt field, a value of the wrong type or a kind outside those groups fails, as
// do references inside the release that point nowhere (a selector matching no pods, a probe on a
// port the container does not name, a scaler aimed at no Deployment).
//
//	validate [-json] [FILE]   reads FILE, or standard input; one line per object, exit 1 on any
//	                          error; -json prints the decoded objects instead, as a JSON array
package main

import (
	"bufio"
	"bytes"
	encodingjson "encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// newScheme holds the kinds a release of the chart may contain, and nothing else.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		policyv1.AddToScheme,
		networkingv1.AddToScheme,
		autoscalingv2.AddToScheme,
		batchv1.AddToScheme,
		kedav1alpha1.AddToScheme,
		monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// decoded is one object of the stream with where it came from, for messages.
type decoded struct {
	index int
	obj   runtime.Object
}

func main() {
	asJSON := flag.Bool("json", false, "print the decoded objects as a JSON array (messages go to standard error)")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: validate [-json] [FILE]") }
	flag.Parse()
	var in io.Reader = os.Stdin
	source := "stdin"
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		in, source = f, flag.Arg(0)
	}
	var out io.Writer = os.Stdout
	if *asJSON {
		out = os.Stderr
	}
	objects, failures, err := validate(in, source, out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d error(s)\n", source, failures)
		os.Exit(1)
	}
	if *asJSON {
		list := make([]runtime.Object, 0, len(objects))
		for _, d := range objects {
			list = append(list, d.obj)
		}
		if err := encodingjson.NewEncoder(os.Stdout).Encode(list); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// validate decodes every document of r, then checks the references between the objects; it writes
// one line per object or error to out and returns the objects and how many errors it found.
func validate(r io.Reader, source string, out io.Writer) ([]decoded, int, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, 0, err
	}
	// Strict: unknown and duplicate fields are errors, as `kubectl apply --validate=strict` makes them.
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objects []decoded
	failures := 0
	fail := func(format string, args ...any) {
		failures++
		fmt.Fprintf(out, "error: %s: %s\n", source, fmt.Sprintf(format, args...))
	}
	for index := 1; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, failures, fmt.Errorf("%s: document %d: %w", source, index, err)
		}
		if isEmpty(doc) {
			continue
		}
		obj, gvk, err := serializer.Decode(doc, nil, nil)
		if err != nil {
			if gvk != nil && runtime.IsNotRegisteredError(err) {
				fail("document %d: kind %s of %s is not one the chart may render: %v", index, gvk.Kind, gvk.GroupVersion(), err)
			} else {
				fail("document %d: %v", index, err)
			}
			continue
		}
		objects = append(objects, decoded{index: index, obj: obj})
		fmt.Fprintf(out, "ok %s\n", describe(obj))
	}
	if len(objects) == 0 && failures == 0 {
		fail("no objects")
	}
	for _, problem := range checkRelease(objects) {
		fail("%s", problem)
	}
	return objects, failures, nil
}

func isEmpty(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}
