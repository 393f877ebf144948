package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// podSpec is the part of a pod template the checks below read.
type podSpec struct {
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken"`
	SecurityContext              struct {
		RunAsNonRoot   *bool  `json:"runAsNonRoot"`
		RunAsUser      *int64 `json:"runAsUser"`
		SeccompProfile struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	InitContainers []container `json:"initContainers"`
	Containers     []container `json:"containers"`
}

type container struct {
	Name            string   `json:"name"`
	Args            []string `json:"args"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
}

// The pods can start and hold nothing they do not need: the image's user is numeric and the
// pods name it (the kubelet refuses runAsNonRoot with a user name it cannot check), seccomp is
// the runtime's default, no service account token is mounted, every container drops its
// capabilities on a read-only root; and each pod migrates in an init container before its
// server starts (the server's /readyz also fails until the schema is at its version).
func TestKubernetesPodsCanStart(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(string(dockerfile), -1)
	if len(users) == 0 {
		t.Fatal("the Dockerfile sets no USER")
	}
	user := users[len(users)-1][1]
	uid, err := strconv.ParseInt(regexp.MustCompile(`^[^:]*`).FindString(user), 10, 64)
	if err != nil || uid == 0 {
		t.Fatalf("the image's USER %q is not a numeric non-root user", user)
	}
	var deployment struct {
		Spec struct{ Template struct{ Spec podSpec } }
	}
	var job struct {
		Spec struct{ Template struct{ Spec podSpec } }
	}
	decodeYAML(t, filepath.Join("k8s", "deployment.yaml"), &deployment)
	decodeYAML(t, filepath.Join("k8s", "migrate-job.yaml"), &job)
	for name, pod := range map[string]podSpec{"Deployment": deployment.Spec.Template.Spec, "Job": job.Spec.Template.Spec} {
		sc := pod.SecurityContext
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != uid {
			t.Errorf("%s: runAsNonRoot %v, runAsUser %v; want true and the image's %d", name, sc.RunAsNonRoot, sc.RunAsUser, uid)
		}
		if sc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: seccompProfile %q, want RuntimeDefault", name, sc.SeccompProfile.Type)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken must be false", name)
		}
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			cs := c.SecurityContext
			if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.ReadOnlyRootFilesystem == nil ||
				!*cs.ReadOnlyRootFilesystem || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s container %s: want no privilege escalation, a read-only root and every capability dropped", name, c.Name)
			}
		}
	}
	init := deployment.Spec.Template.Spec.InitContainers
	if len(init) != 1 || len(init[0].Args) != 1 || init[0].Args[0] != "migrate" {
		t.Errorf("the Deployment's pods must migrate in an init container before the server starts: %+v", init)
	}
}

// The compose file publishes its ports on loopback only (its development key has every
// scope), and the Kubernetes manifests admit traffic to the pods on their two ports only.
func TestPortsAreNotPublishedToEveryone(t *testing.T) {
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	published := regexp.MustCompile(`(?m)^\s+- "([^"]*:\d+)"$`).FindAllStringSubmatch(string(raw), -1)
	if len(published) < 4 {
		t.Fatalf("found %d published ports in docker-compose.yml, want the API's, the line protocol's, Prometheus's and Grafana's", len(published))
	}
	for _, m := range published {
		if !regexp.MustCompile(`^127\.0\.0\.1:`).MatchString(m[1]) {
			t.Errorf("docker-compose.yml publishes %q on every interface", m[1])
		}
	}
	var policy struct {
		Kind string
		Spec struct {
			PolicyTypes []string `json:"policyTypes"`
			Ingress     []struct {
				Ports []struct{ Port any }
			}
		}
	}
	decodeYAML(t, filepath.Join("k8s", "networkpolicy.yaml"), &policy)
	if policy.Kind != "NetworkPolicy" || len(policy.Spec.Ingress) != 1 || len(policy.Spec.Ingress[0].Ports) != 2 {
		t.Fatalf("the NetworkPolicy must admit the two ports only: %+v", policy)
	}
}

// The kustomization renders (as `kubectl apply -k deploy/k8s` would) into every resource in
// the namespace, and the rendered Deployment is the one the checks above read.
func TestKustomizationRenders(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rendered, err := k.Run(filesys.MakeFsOnDisk(), "k8s")
	if err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	kinds := map[string]bool{}
	for _, res := range rendered.Resources() {
		kinds[res.GetKind()] = true
		if res.GetKind() != "Namespace" && res.GetNamespace() != "matchmaker" {
			t.Errorf("%s %s is rendered in namespace %q, want matchmaker", res.GetKind(), res.GetName(), res.GetNamespace())
		}
		if res.GetKind() != "Deployment" {
			continue
		}
		var dep struct {
			Spec struct{ Template struct{ Spec podSpec } }
		}
		js, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &dep); err != nil {
			t.Fatal(err)
		}
		pod := dep.Spec.Template.Spec
		if pod.SecurityContext.RunAsUser == nil || pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault" || len(pod.InitContainers) != 1 {
			t.Errorf("the rendered Deployment lost its pod settings: %+v", pod)
		}
	}
	for _, kind := range []string{"Namespace", "Secret", "Job", "Deployment", "Service", "HorizontalPodAutoscaler", "NetworkPolicy"} {
		if !kinds[kind] {
			t.Errorf("the kustomization renders no %s", kind)
		}
	}
}
