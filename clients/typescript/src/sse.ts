// A reader of Server-Sent Events (the WHATWG event-stream format) from a fetch body: node's
// fetch streams, so the queue's events need no EventSource, which could not send the API key.

/** One event of a stream: its id, type (event:, "message" when none) and data lines joined. */
export interface SSEMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * sseEvents yields the events of an event stream as they arrive; comment lines are skipped.
 * An abort of signal ends the stream and throws its reason: node's fetch follows a signal
 * through a weak reference to its Request and, once that is collected, no longer ends the
 * body on an abort (the tests saw a wait outlive its signal), so the reader is cancelled here.
 */
export async function* sseEvents(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SSEMessage> {
  signal?.throwIfAborted();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const abort = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", abort, { once: true });
  let buffered = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      signal?.throwIfAborted();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // Lines end in \n, \r\n or \r; a \r last in the buffer may be the first half of \r\n.
      let start = 0;
      for (let i = 0; i < buffered.length; i++) {
        const c = buffered[i];
        if (c !== "\n" && c !== "\r") continue;
        if (c === "\r" && i === buffered.length - 1 && !done) break;
        const line = buffered.slice(start, i);
        if (c === "\r" && buffered[i + 1] === "\n") i++;
        start = i + 1;
        if (line === "") {
          if (data.length > 0) yield { id, event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) id = value;
      }
      buffered = buffered.slice(start);
      if (done) return; // an event not ended by a blank line is dropped, as EventSource does
    }
  } finally {
    signal?.removeEventListener("abort", abort);
    reader.releaseLock();
  }
}
