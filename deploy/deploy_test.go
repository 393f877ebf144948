// Package deploy holds the files that run Matchmaker outside `go run`: docker compose with
// Prometheus and Grafana, and Kubernetes manifests. Its tests check that those files load,
// validate, and only name metrics the service really exports.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/matchmakerhq/matchmaker/internal/handlers"
	"github.com/matchmakerhq/matchmaker/internal/lineproto"
	"github.com/matchmakerhq/matchmaker/internal/metrics"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// requireTool finds a command the test needs; CI installs them (MATCHMAKER_REQUIRE_TEST_DB
// marks a CI run), elsewhere the test is skipped with a message.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("MATCHMAKER_REQUIRE_TEST_DB") == "1" {
			t.Fatalf("%s is not installed (Debian package prometheus); CI must install it", name)
		}
		t.Skipf("%s is not installed (Debian package prometheus)", name)
	}
	return path
}

func TestComposeFileLoadsAndWiresTheStack(t *testing.T) {
	details, err := loader.LoadConfigFiles(context.Background(), []string{"docker-compose.yml"}, ".")
	if err != nil {
		t.Fatal(err)
	}
	project, err := loader.LoadWithContext(context.Background(), *details, func(o *loader.Options) {
		o.SetProjectName("matchmaker", true)
		o.SkipResolveEnvironment = true
	})
	if err != nil {
		t.Fatalf("docker-compose.yml does not validate: %v", err)
	}
	for _, name := range []string{"postgres", "api", "prometheus", "grafana"} {
		if _, ok := project.Services[name]; !ok {
			t.Fatalf("service %q is missing", name)
		}
	}
	api := project.Services["api"]
	if api.Build == nil || api.Build.Dockerfile != "Dockerfile" {
		t.Error("the api must be built from the repository's Dockerfile")
	}
	if dep, ok := api.DependsOn["postgres"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Error("the api must wait for a healthy postgres")
	}
	env := api.Environment
	for _, k := range []string{"DATABASE_URL", "MATCHMAKER_API_KEYS", "MATCHMAKER_MIGRATE"} {
		if v := env[k]; v == nil || *v == "" {
			t.Errorf("api lacks %s", k)
		}
	}
	keys, err := handlers.ParseAPIKeys(*env["MATCHMAKER_API_KEYS"])
	if err != nil || len(keys) != 1 || keys[0].Hash != sha256Of("dev-key") {
		t.Errorf("the development key must parse and be the hash of dev-key: %v", err)
	}
}

// The demo queue the compose stack creates is one the service accepts, and it is created only
// once the API is healthy.
func TestComposeCreatesAValidDemoQueue(t *testing.T) {
	details, err := loader.LoadConfigFiles(context.Background(), []string{"docker-compose.yml"}, ".")
	if err != nil {
		t.Fatal(err)
	}
	project, err := loader.LoadWithContext(context.Background(), *details, func(o *loader.Options) {
		o.SetProjectName("matchmaker", true)
		o.SkipResolveEnvironment = true
	})
	if err != nil {
		t.Fatal(err)
	}
	demo, ok := project.Services["demo-queue"]
	if !ok {
		t.Fatal("no demo-queue service")
	}
	if dep, ok := demo.DependsOn["api"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Error("the demo queue must wait for a healthy api")
	}
	body, err := os.ReadFile("demo-queue.json")
	if err != nil {
		t.Fatal(err)
	}
	h := handlers.NewServer(handlers.Deps{Auth: &handlers.Auth{Off: true}})
	req := httptest.NewRequest(http.MethodPut, "/v1/queues/ranked", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("PUT the demo queue: %d %s", rec.Code, rec.Body)
	}
}

func sha256Of(s string) [32]byte {
	keys, _ := handlers.ParseAPIKeys("x:read:" + handlers.HashKey(s))
	return keys[0].Hash
}

func TestPrometheusConfigPassesPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	out, err := exec.Command(promtool, "check", "config", "prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// exportedMetrics starts the service's handler, sends it one request of each kind so every
// labelled metric has a series, and returns the names of the metric families it exports.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewService(ratings.Metered(store, metrics.NewStoreCalls(reg).Observer(store.Name())), ratings.DefaultModel())
	h := handlers.NewServer(handlers.Deps{Registry: reg, Auth: &handlers.Auth{Off: true}, Ratings: svc})
	lineproto.NewMetrics(reg)
	send := func(method, path, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send(http.MethodPost, "/v1/matchmake", `{"team_size":1,"players":[{"id":"a","rating":1},{"id":"b","rating":2}]}`)
	send(http.MethodGet, "/v1/ratings?game_type=ctf&ids=a", "")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	return names
}

var metricName = regexp.MustCompile(`\bmatchmaker_[a-z0-9_]+`)

// describedNames returns the names of the metrics register registers, read from the
// collectors' descriptions: labelled metrics count before any series exists.
func describedNames(t *testing.T, register func(prometheus.Registerer)) map[string]bool {
	t.Helper()
	var d described
	register(&d)
	names := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range d.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for desc := range ch {
			if m := fqName.FindStringSubmatch(desc.String()); m != nil {
				names[m[1]] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no metric described")
	}
	return names
}

// described is a Registerer that keeps what is registered on it.
type described struct{ collectors []prometheus.Collector }

func (d *described) Register(c prometheus.Collector) error {
	d.collectors = append(d.collectors, c)
	return nil
}
func (d *described) MustRegister(cs ...prometheus.Collector) {
	d.collectors = append(d.collectors, cs...)
}
func (d *described) Unregister(prometheus.Collector) bool { return false }

// Every dashboard's panels and variables query only metrics the service exports: those of
// the HTTP handlers, the stores and the line protocol, and the queue's (labelled by queue).
func TestDashboardQueriesOnlyExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	for name := range describedNames(t, func(r prometheus.Registerer) { queuesvc.NewMetrics(r) }) {
		exported[name] = true
	}
	files, err := filepath.Glob(filepath.Join("grafana", "dashboards", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	uids := map[string]string{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name       string `json:"name"`
					Definition string `json:"definition"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("%s: dashboard JSON: %v", file, err)
		}
		if dash.UID == "" || uids[dash.UID] != "" {
			t.Errorf("%s: uid %q is empty or also %s's", file, dash.UID, uids[dash.UID])
		}
		uids[dash.UID] = file
		queried := 0
		check := func(where, expr string) {
			for _, name := range metricName.FindAllString(expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("%s: %s queries %s, which the service does not export", file, where, name)
				}
			}
		}
		for _, p := range dash.Panels {
			for _, target := range p.Targets {
				check("panel "+strconv.Quote(p.Title), target.Expr)
			}
		}
		for _, v := range dash.Templating.List {
			check("variable "+v.Name, v.Definition)
		}
		if queried < 5 {
			t.Errorf("%s names only %d metrics", file, queried)
		}
	}
}

func TestServiceMetricsPassPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	reg := prometheus.NewRegistry()
	h := handlers.NewServer(handlers.Deps{Registry: reg})
	req := httptest.NewRequest(http.MethodPost, "/v1/matchmake", strings.NewReader(`{"players":[]}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = rec.Body
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestKubernetesManifestsAreComplete(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	kinds := map[string]string{}
	for _, f := range files {
		docs := loadYAML(t, f)
		for _, d := range docs {
			kind, _ := d["kind"].(string)
			kinds[kind] = string(mustJSON(t, d))
		}
	}
	for _, kind := range []string{"Deployment", "Service", "HorizontalPodAutoscaler", "Job", "Secret", "Kustomization"} {
		if kinds[kind] == "" {
			t.Errorf("no %s manifest", kind)
		}
	}
	dep := kinds["Deployment"]
	for _, want := range []string{`"readinessProbe"`, `"/readyz"`, `"livenessProbe"`, `"/healthz"`, `"resources"`, `"MATCHMAKER_MIGRATE","value":"false"`} {
		if !strings.Contains(dep, want) {
			t.Errorf("the Deployment lacks %s", want)
		}
	}
	if job := kinds["Job"]; !strings.Contains(job, `"args":["migrate"]`) {
		t.Error("the Job must run the migrate subcommand")
	}
	var kust struct{ Resources []string }
	if err := json.Unmarshal([]byte(kinds["Kustomization"]), &kust); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(kust.Resources, name) {
			t.Errorf("kustomization.yaml does not list %s", name)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadYAML reads a one-document manifest as Kubernetes tooling would (YAML to JSON).
func loadYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if doc["apiVersion"] == nil || doc["kind"] == nil {
		t.Fatalf("%s: no apiVersion or kind", path)
	}
	return []map[string]any{doc}
}

// TestKubernetesConnectionsFitPostgres: at the autoscaler's maximum, during a rolling update
// too, the replicas' pools and
// the queue store's two connections each stay within Postgres's default max_connections (100,
// less the 3 reserved for superusers), and every pool outnumbers its committers.
func TestKubernetesConnectionsFitPostgres(t *testing.T) {
	var deployment struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct{ Name, Value string }
					}
				}
			}
		}
	}
	var hpa struct {
		Spec struct{ MaxReplicas int }
	}
	var rollout struct {
		Spec struct {
			Strategy struct {
				RollingUpdate struct{ MaxSurge int }
			}
		}
	}
	decodeYAML(t, filepath.Join("k8s", "deployment.yaml"), &rollout)
	decodeYAML(t, filepath.Join("k8s", "deployment.yaml"), &deployment)
	decodeYAML(t, filepath.Join("k8s", "hpa.yaml"), &hpa)
	env := map[string]int{}
	for _, c := range deployment.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if n, err := strconv.Atoi(e.Value); err == nil {
				env[e.Name] = n
			}
		}
	}
	pool, committers := env["MATCHMAKER_DB_MAX_CONNS"], env["MATCHMAKER_STORE_COMMITTERS"]
	if pool == 0 || committers == 0 || hpa.Spec.MaxReplicas == 0 {
		t.Fatalf("the manifests must size the pool (%d), the committers (%d) and the replicas (%d) explicitly",
			pool, committers, hpa.Spec.MaxReplicas)
	}
	if pool <= committers {
		t.Errorf("a pool of %d leaves no connection for reads beside %d committers", pool, committers)
	}
	// A rolling update adds maxSurge pods to the most the autoscaler runs.
	pods := hpa.Spec.MaxReplicas + rollout.Spec.Strategy.RollingUpdate.MaxSurge
	if total := pods * (pool + 2); total > 97 {
		t.Errorf("%d pods (the autoscaler's %d and a rolling update's surge) x (%d pooled + 2) = %d connections, over Postgres's default 97 for users",
			pods, hpa.Spec.MaxReplicas, pool, total)
	}
}

func decodeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every dashboard query parses as PromQL: promtool checks them as recording rules, with
// Grafana's variables replaced by what Grafana would put there.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := requireTool(t, "promtool")
	files, err := filepath.Glob(filepath.Join("grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$queue", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboards\n    rules:\n")
	n := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range dash.Panels {
			for _, target := range p.Targets {
				n++
				expr, _ := json.Marshal(grafana.Replace(target.Expr)) // a JSON string is a YAML string
				fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", n, expr)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
