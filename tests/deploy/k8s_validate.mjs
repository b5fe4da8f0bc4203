// k8s_validate.mjs — validates every object of the given Kubernetes manifest files against
// the Kubernetes OpenAPI JSON Schemas (the kubernetes-models package: ajv over the
// published schemas, no cluster needed). Prints "ok - FILE KIND/NAME" or "not ok - ..." with
// the schema errors, and last "N passed, N failed".
//   node k8s_validate.mjs NODE_MODULES_DIR FILE...
// A known-bad Deployment is checked first: the validator must reject it (so a broken
// install cannot pass everything silently).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [modules, ...files] = process.argv.slice(2);
const { parseAllDocuments } = await import(pathToFileURL(join(modules, "yaml/dist/index.js")).href);
let passed = 0, failed = 0;
const report = (ok, what, why) => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? "ok" : "not ok"} - ${what}${why ? `\n   ${why}` : ""}`);
};

// apiVersion "apps/v1" + kind "Deployment" → kubernetes-models/apps/v1/Deployment.js
async function model(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  const dir = group ? join(group, version) : version;
  const file = join(modules, "kubernetes-models", dir, `${kind}.js`);
  const mod = await import(pathToFileURL(file).href);
  return mod[kind] ?? mod.default;
}

async function validate(obj) {
  const Model = await model(obj.apiVersion, obj.kind);
  new Model(obj).validate(); // throws with the schema errors
}

try {
  await validate({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "bad" },
                   spec: { replicas: "three", selector: {}, template: { spec: { containers: [{ image: 1 }] } } } });
  report(false, "the validator rejects a broken Deployment", "it accepted replicas: \"three\"");
} catch (e) {
  const msg = String(e.message ?? e);
  report(/replicas/.test(msg), "the validator rejects a broken Deployment", /replicas/.test(msg) ? "" : msg.slice(0, 300));
}

for (const f of files) {
  const docs = parseAllDocuments(readFileSync(f, "utf8"));
  for (const d of docs) {
    if (d.errors.length) { report(false, `${f}: YAML`, d.errors[0].message); continue; }
    const obj = d.toJS();
    if (!obj) continue;
    const what = `${f.split("/").slice(-2).join("/")} ${obj.kind}/${obj.metadata?.name}`;
    try {
      await validate(obj);
      report(true, what);
    } catch (e) {
      report(false, what, String(e.message ?? e).slice(0, 800).replace(/\n/g, "\n   "));
    }
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
