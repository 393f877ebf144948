// The example program of docs/clients.md (examples/duel.ts), run as a reader runs it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { startService, type Service } from "./server.js";

let service: Service;

before(async () => {
  service = await startService();
});

after(async () => {
  await service?.stop();
});

test("examples/duel.ts makes a match and posts its result", { timeout: 90_000 }, async () => {
  const program = fileURLToPath(new URL("../examples/duel.js", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [program], {
    env: { ...process.env, MATCHMAKER_URL: service.url, KEY: service.key },
    timeout: 80_000,
  });
  assert.match(stdout, /^match mt-\S+: alice against bob$/m);
  assert.match(stdout, /^alice: weight \d+\.\d after 1 game\(s\)$/m);
  assert.match(stdout, /^bob: weight \d+\.\d after 1 game\(s\)$/m);
});
