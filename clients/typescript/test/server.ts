// The service the tests run against: the one at MATCHMAKER_URL (with MATCHMAKER_KEY, a key
// of every scope), or else the repository's own binary, built and started here on a free
// port with the in-memory store and a key made for it.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface Service {
  url: string;
  key: string;
  stop(): Promise<void>;
}

export async function startService(): Promise<Service> {
  const url = process.env.MATCHMAKER_URL;
  if (url) {
    const key = process.env.MATCHMAKER_KEY;
    if (!key) throw new Error("MATCHMAKER_URL is set without MATCHMAKER_KEY (a key with the read, match, results and admin scopes)");
    return { url, key, stop: async () => {} };
  }
  // dist/test/server.js -> the repository's root.
  const root = fileURLToPath(new URL("../../../../", import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), "matchmaker-ts-"));
  const bin = join(dir, "api");
  try {
    execFileSync("go", ["build", "-o", bin, "./cmd/api"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`set MATCHMAKER_URL and MATCHMAKER_KEY, or have go on the PATH to build the service: ${String(err)}`);
  }
  const key = randomBytes(16).toString("hex");
  const sum = createHash("sha256").update(key).digest("hex");
  const child = spawn(bin, [], {
    cwd: dir,
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      ...process.env,
      MATCHMAKER_ADDR: "127.0.0.1:0",
      MATCHMAKER_API_KEYS: `ts:read+match+results+admin:${sum}`,
      DATABASE_URL: "",
      // The match function's test serves one on 127.0.0.1, which the service calls.
      MATCHMAKER_WEBHOOK_ALLOW_CIDRS: "127.0.0.0/8",
    },
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    return { url: await listening(child), key, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// listening answers the address the service logs once it listens (a JSON line of its log).
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the service did not log that it listens within 30 s")), 30_000);
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) before it listened`)));
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; addr?: string };
        if (entry.msg === "listening" && entry.addr) {
          clearTimeout(timer);
          resolve(`http://${entry.addr}`);
        }
      } catch {
        // not a JSON line
      }
    });
  });
}
