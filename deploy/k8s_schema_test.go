package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kubernetesTypes are the API types the manifests may use, by apiVersion and kind. A kind not
// listed here fails the check: add its type when a manifest needs it.
var kubernetesTypes = map[string]func() any{
	"v1/Namespace":                           func() any { return new(corev1.Namespace) },
	"v1/Secret":                              func() any { return new(corev1.Secret) },
	"v1/Service":                             func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                     func() any { return new(appsv1.Deployment) },
	"batch/v1/Job":                           func() any { return new(batchv1.Job) },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return new(networkingv1.NetworkPolicy) },
}

// conformsToKubernetes decodes one rendered resource into its Kubernetes API type, refusing
// any field the type does not have and any value of the wrong type: what kubeconform checks
// against the API's JSON schemas, which cannot be downloaded here (the Go types they are
// generated from come through the module proxy).
func conformsToKubernetes(resource []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(resource, &head); err != nil {
		return err
	}
	newObject, ok := kubernetesTypes[head.APIVersion+"/"+head.Kind]
	if !ok {
		return fmt.Errorf("%s %s: no Kubernetes type known for apiVersion %q", head.Kind, head.Metadata.Name, head.APIVersion)
	}
	if head.Metadata.Name == "" {
		return fmt.Errorf("%s: metadata.name is missing", head.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(resource))
	dec.DisallowUnknownFields()
	if err := dec.Decode(newObject()); err != nil {
		return fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
	}
	return nil
}

// Every rendered resource is a valid object of its Kubernetes API type.
func TestRenderedManifestsConformToTheKubernetesAPI(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rendered, err := k.Run(filesys.MakeFsOnDisk(), "k8s")
	if err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	if len(rendered.Resources()) == 0 {
		t.Fatal("the kustomization renders nothing")
	}
	for _, res := range rendered.Resources() {
		js, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := conformsToKubernetes(js); err != nil {
			t.Error(err)
		}
	}
}

// The check refuses what a schema check would: a misspelled field, a value of the wrong type,
// an unknown kind.
func TestConformanceCheckRefusesBadManifests(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, want string }{
		"misspelled field": {
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"m"},"spec":{"replica":2}}`,
			`unknown field "replica"`,
		},
		"wrong type": {
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"m"},"spec":{"ports":[{"port":"http"}]}}`,
			"cannot unmarshal string",
		},
		"unknown kind": {
			`{"apiVersion":"apps/v1","kind":"Deploymnet","metadata":{"name":"m"}}`,
			"no Kubernetes type known",
		},
		"no name": {
			`{"apiVersion":"v1","kind":"Namespace","metadata":{}}`,
			"metadata.name is missing",
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := conformsToKubernetes([]byte(tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	ok := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"m"},"spec":{"replicas":2}}`
	if err := conformsToKubernetes([]byte(ok)); err != nil {
		t.Fatalf("a valid Deployment was refused: %v", err)
	}
}
