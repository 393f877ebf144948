// The event-stream reader on streams cut at every byte, with the line endings and fields the
// format allows.
import assert from "node:assert/strict";
import { test } from "node:test";

import { sseEvents, type SSEMessage } from "../src/sse.js";

/** stream is text as a body cut into chunks of size bytes. */
function stream(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function read(text: string, size: number): Promise<SSEMessage[]> {
  const out: SSEMessage[] = [];
  for await (const m of sseEvents(stream(text, size))) out.push(m);
  return out;
}

test("events, comments and line endings", async () => {
  const text =
    ": keep-alive\n\n" +
    'id: 41\nevent: matched\ndata: {"seq":41,"ticket_id":"tk-é"}\n\n' +
    "id: 42\r\nevent: expired\r\ndata:first\r\ndata: second\r\n\r\n" +
    "data: no type\rid\r\r" +
    "event: dropped\n\n" + // no data: not dispatched
    "data: unterminated";
  const want: SSEMessage[] = [
    { id: "41", event: "matched", data: '{"seq":41,"ticket_id":"tk-é"}' },
    { id: "42", event: "expired", data: "first\nsecond" },
    { id: "", event: "message", data: "no type" },
  ];
  for (const size of [1, 2, 3, 7, 1 << 16]) {
    assert.deepEqual(await read(text, size), want, `chunks of ${size} bytes`);
  }
});

test("an abort cancels the body and throws its reason", async () => {
  let cancelled: unknown;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode("data: one\n\n"));
      // and nothing more: a quiet stream
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const stop = new AbortController();
  const seen: string[] = [];
  const reading = (async () => {
    for await (const m of sseEvents(body, stop.signal)) {
      seen.push(m.data);
      stop.abort(new Error("left"));
    }
  })();
  await assert.rejects(reading, /left/);
  assert.deepEqual(seen, ["one"]);
  assert.match(String(cancelled), /left/, "the body is cancelled, so its connection closes");
});
