#!/usr/bin/env python3
"""check_deploy.py — what deploy/ must say, checked by reading it (no Docker, no cluster):
the Dockerfile's stages and final image, compose.yaml's services, HAProxy's backend, and
the Kubernetes objects' operational settings (replicas, probes, security, shared secrets,
autoscaling, disruption budget, migration Job). Schema validity is k8s_validate.mjs's job.
Prints "ok - ..." / "not ok - ..." and "N passed, N failed".
usage: check_deploy.py DEPLOY_DIR"""
import os, re, shlex, sys
import yaml

deploy = sys.argv[1]
passed = failed = 0


def t(desc, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok - {desc}")
    else:
        failed += 1
        print(f"not ok - {desc}" + (f"\n   {why}" if why else ""))


def load(path):
    with open(os.path.join(deploy, path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


# ---- Dockerfile
def dockerfile_stages(text):
    """[(from_line, [instructions])] with continuation lines joined, comments dropped."""
    lines, cur = [], ""
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        cur += (" " if cur else "") + s.rstrip("\\").strip()
        if not s.endswith("\\"):
            lines.append(cur)
            cur = ""
    stages = []
    for ln in lines:
        op = ln.split(None, 1)[0].upper()
        if op == "FROM":
            stages.append((ln, []))
        elif stages:
            stages[-1][1].append(ln)
    return stages


df = open(os.path.join(deploy, "Dockerfile")).read()
stages = dockerfile_stages(df)
t("Dockerfile: multi-stage (a build stage and a final one)", len(stages) >= 2, f"{len(stages)} stage(s)")
final_from, final = stages[-1]
t("Dockerfile: final image is Debian 12 slim", re.match(r"FROM\s+debian:12-slim(\s|$)", final_from, re.I) is not None, final_from)
t("Dockerfile: build stage is Debian 12", all(re.match(r"FROM\s+debian:12", f, re.I) for f, _ in stages), "")
ops = {}
for ins in final:
    ops.setdefault(ins.split(None, 1)[0].upper(), []).append(ins.split(None, 1)[1] if " " in ins else "")
final_text = "\n".join(final)
build_tools = [p for p in ("build-essential", "gcc", "g++", "make", "autoconf", "automake", "libtool", "pkg-config", "clang")
               if re.search(r"(^|\s)" + re.escape(p) + r"(\s|$)", " ".join(i for i in final if i.upper().startswith("RUN")))]
t("Dockerfile: no build tools installed in the final image", not build_tools, ", ".join(build_tools))
dev = re.findall(r"\S+-dev\b", " ".join(i for i in final if i.upper().startswith("RUN")))
t("Dockerfile: no -dev packages in the final image", not dev, " ".join(dev))
t("Dockerfile: apt lists removed in the same layer", all("rm -rf /var/lib/apt/lists" in i for i in final if "apt-get install" in i))
t("Dockerfile: apt installs without recommends", all("--no-install-recommends" in i for f, s in stages for i in s if "apt-get install" in i))
t("Dockerfile: the binary comes from the build stage", any(i.upper().startswith("COPY --FROM=BUILD") for i in final))
user = ops.get("USER", [""])[-1]
t("Dockerfile: runs as a non-root user (numeric, so runAsNonRoot can verify it)",
  re.fullmatch(r"[1-9]\d*(:\d+)?", user) is not None and not user.startswith("0"), f"USER {user!r}")
hc = ops.get("HEALTHCHECK", [""])[-1]
t("Dockerfile: HEALTHCHECK on /health", "/health" in hc and "CMD" in hc, hc)
t("Dockerfile: HEALTHCHECK's tool (curl) is installed in the final image", "curl" not in hc or re.search(r"apt-get install[^&]*\scurl(\s|$)", final_text) is not None)
ep = ops.get("ENTRYPOINT", [""])[-1]
t("Dockerfile: ENTRYPOINT in exec form (signals reach graphgate)", ep.startswith("["), ep)
t("Dockerfile: STOPSIGNAL SIGTERM", ops.get("STOPSIGNAL", [""])[-1] == "SIGTERM")
for ins in (i for s in stages for i in s[1]):
    if ins.upper().startswith("COPY") and "--from" not in ins.lower():
        for src in shlex.split(ins)[1:-1]:
            if src != ".":
                t(f"Dockerfile: COPY source {src} exists", os.path.exists(os.path.join(deploy, "..", src)))
t("Dockerfile: the internal listener stays on loopback", "GRAPHGATE_INTERNAL_LISTEN=127.0.0.1:" in final_text)

# ---- compose.yaml and haproxy.cfg
compose = load("compose.yaml")[0]
svcs = compose.get("services", {})
gg = [n for n, s in svcs.items() if s.get("build", {}).get("dockerfile") == "deploy/Dockerfile" and s.get("command") != ["migrate"]]
t("compose: two graphgate replicas built from deploy/Dockerfile", len(gg) == 2, ", ".join(gg))
t("compose: PostgreSQL and HAProxy services", "postgres" in svcs and "haproxy" in svcs)
envs = [svcs[n].get("environment", {}) for n in gg]
t("compose: replicas share session secret, key pepper and database URL",
  all(e.get(k) == envs[0].get(k) and e.get(k) for e in envs for k in
      ("GRAPHGATE_SESSION_SECRET", "GRAPHGATE_AUTH_KEY_PEPPER", "GRAPHGATE_DATABASE_URL")))
t("compose: database URL points at the postgres service", "@postgres:5432/" in str(envs[0].get("GRAPHGATE_DATABASE_URL")))
t("compose: replicas wait for the migrations", all(svcs[n].get("depends_on", {}).get("migrate", {}).get("condition") == "service_completed_successfully" for n in gg))
t("compose: migrate runs `migrate` after PostgreSQL is healthy",
  svcs.get("migrate", {}).get("command") == ["migrate"] and svcs["migrate"].get("depends_on", {}).get("postgres", {}).get("condition") == "service_healthy")
t("compose: replicas have a readiness healthcheck", all("/ready" in " ".join(svcs[n].get("healthcheck", {}).get("test", [])) for n in gg))
hap = svcs.get("haproxy", {})
cfg_mount = [v for v in hap.get("volumes", []) if v.startswith("./haproxy.cfg:")]
t("compose: HAProxy mounts deploy/haproxy.cfg", bool(cfg_mount) and os.path.exists(os.path.join(deploy, "haproxy.cfg")))
hcfg = open(os.path.join(deploy, "haproxy.cfg")).read()
servers = re.findall(r"^\s*server\s+(\S+)\s+(\S+):(\d+)", hcfg, re.M)
t("haproxy.cfg: one server per replica, on the replicas' port 8080", sorted(s[1] for s in servers) == sorted(gg) and all(s[2] == "8080" for s in servers), str(servers))
t("haproxy.cfg: health check on /ready", re.search(r"option\s+httpchk\s+GET\s+/ready", hcfg) is not None)
t("haproxy.cfg: no stickiness (sessions are signed tokens)", not re.search(r"^\s*(stick|cookie|balance\s+source)", hcfg, re.M))
m = re.search(r"timeout\s+server\s+(\d+)s", hcfg)
t("haproxy.cfg: server timeout outlasts the 15 s stream ping", m is not None and int(m.group(1)) > 15)

# ---- Kubernetes
k8s = {}
for f in sorted(os.listdir(os.path.join(deploy, "kubernetes"))):
    if f.endswith(".yaml") and f != "kustomization.yaml":
        for d in load(os.path.join("kubernetes", f)):
            k8s[d["kind"]] = d
for kind in ("Deployment", "Service", "ConfigMap", "Secret", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Job"):
    t(f"kubernetes: a {kind}", kind in k8s)
kust = load("kubernetes/kustomization.yaml")[0]
t("kubernetes: kustomization lists existing files", all(os.path.exists(os.path.join(deploy, "kubernetes", r)) for r in kust["resources"]))
dep = k8s["Deployment"]
spec, pod = dep["spec"], dep["spec"]["template"]["spec"]
c = pod["containers"][0]
t("Deployment: 3 replicas", spec.get("replicas") == 3)
t("Deployment: selector matches the pod labels",
  all(dep["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in spec["selector"]["matchLabels"].items()))
port_names = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
def probe_ok(p, path):
    g = c.get(p, {}).get("httpGet", {})
    return g.get("path") == path and (g.get("port") in port_names or g.get("port") in port_names.values())
t("Deployment: readiness probe on /ready", probe_ok("readinessProbe", "/ready"))
t("Deployment: liveness probe on /health", probe_ok("livenessProbe", "/health"))
t("Deployment: probes use the public port (the internal listener is loopback only)", port_names.get("http") == 8080)
res = c.get("resources", {})
t("Deployment: resource requests (cpu, memory) and a memory limit",
  {"cpu", "memory"} <= set(res.get("requests", {})) and "memory" in res.get("limits", {}))
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
t("Deployment: non-root (pod and container)", psc.get("runAsNonRoot") is True and csc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) > 0)
t("Deployment: read-only root filesystem", csc.get("readOnlyRootFilesystem") is True)
t("Deployment: no privilege escalation, all capabilities dropped",
  csc.get("allowPrivilegeEscalation") is False and csc.get("capabilities", {}).get("drop") == ["ALL"])
mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
t("Deployment: writable /tmp and data dir despite the read-only root", {"/tmp", "/var/lib/graphgate"} <= mounts)
env = {e["name"]: e for e in c.get("env", [])}
sec = k8s["Secret"]
sec_keys = set((sec.get("stringData") or {}).keys()) | set((sec.get("data") or {}).keys())
for var in ("GRAPHGATE_SESSION_SECRET", "GRAPHGATE_AUTH_KEY_PEPPER", "GRAPHGATE_DATABASE_URL"):
    ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef", {})
    t(f"Deployment: {var} from the Secret", ref.get("name") == sec["metadata"]["name"] and ref.get("key") in sec_keys, str(ref))
t("Deployment: replicas refuse to start without the shared secrets", env.get("GRAPHGATE_REQUIRE_SHARED", {}).get("value") == "true")
cm = k8s["ConfigMap"]
vol_cm = [v for v in pod.get("volumes", []) if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
t("Deployment: mounts the ConfigMap, GRAPHGATE_CONFIG points at it",
  bool(vol_cm) and env.get("GRAPHGATE_CONFIG", {}).get("value", "").startswith("/etc/graphgate/") and "graphgate.yaml" in cm["data"])
cmcfg = yaml.safe_load(cm["data"]["graphgate.yaml"])
t("ConfigMap: no secret in the configuration file", not (cmcfg.get("session", {}) or {}).get("secret") and not (cmcfg.get("auth", {}) or {}).get("key_pepper"))
t("ConfigMap: internal listener on loopback", str(cmcfg.get("internal_listen", "")).startswith("127.0.0.1:"))
t("Deployment: grace period longer than shutdown_timeout", pod.get("terminationGracePeriodSeconds", 30) > 10)
svc = k8s["Service"]
t("Service: selects the Deployment's pods", svc["spec"]["selector"] == spec["selector"]["matchLabels"])
t("Service: targets the named http port", all(p.get("targetPort") in port_names for p in svc["spec"]["ports"]))
hpa = k8s["HorizontalPodAutoscaler"]
t("HPA: scales the Deployment, never below 3", hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
  and hpa["spec"]["minReplicas"] >= 3 and hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"])
pdb = k8s["PodDisruptionBudget"]
t("PDB: selects the Deployment's pods, keeps at least 2", pdb["spec"]["selector"]["matchLabels"] == spec["selector"]["matchLabels"]
  and pdb["spec"].get("minAvailable", 0) >= 2)
job = k8s["Job"]
jc = job["spec"]["template"]["spec"]["containers"][0]
jenv = {e["name"]: e for e in jc.get("env", [])}
t("Job: runs `graphgate migrate` on the database URL from the Secret",
  jc.get("args") == ["migrate"] and jenv.get("GRAPHGATE_DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {}).get("key") in sec_keys)
t("Job: non-root, read-only root, bounded retries",
  jc.get("securityContext", {}).get("readOnlyRootFilesystem") is True and job["spec"]["template"]["spec"]["securityContext"].get("runAsNonRoot") is True
  and job["spec"].get("backoffLimit", 6) <= 6 and job["spec"]["template"]["spec"].get("restartPolicy") in ("OnFailure", "Never"))
t("Job: its pods are not selected by the Service or PDB",
  not all(job["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in spec["selector"]["matchLabels"].items()))
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
