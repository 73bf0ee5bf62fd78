// The bench's load generator: N keep-alive HTTP/1.1 connections on raw sockets, each sending
// one prebuilt request, waiting for the whole response, and sending the next (no pipelining).
// It parses only the status line, Content-Length and chunked framing, so one request costs it
// a few microseconds of CPU: it shares the machine's cores with what it measures, and every
// target pays the same price. A server that closes the connection gets a new one.
import net from 'node:net';

export interface LoadSpec {
  /** http://host:port of the target. */
  url: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  /** Requests in this period are sent but not recorded. */
  warmupMs: number;
  durationMs: number;
  expectStatus: number;
}

export interface LoadResult {
  /** Responses recorded (after the warm-up). */
  requests: number;
  /** Responses including the warm-up (what the load generator's CPU time is spent on). */
  allRequests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** Responses with another status than expected (the first one's status and body are kept). */
  unexpected: number;
  firstUnexpected: string | null;
  /** Connections that failed or closed mid-response. */
  socketErrors: number;
}

const CRLF2 = Buffer.from('\r\n\r\n');

export function buildRequest(spec: Pick<LoadSpec, 'url' | 'method' | 'path' | 'headers' | 'body'>): Buffer {
  const { host } = new URL(spec.url);
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  let head = `${spec.method} ${spec.path} HTTP/1.1\r\nhost: ${host}\r\nconnection: keep-alive\r\n`;
  for (const [name, value] of Object.entries(spec.headers ?? {})) head += `${name}: ${value}\r\n`;
  if (body) head += `content-length: ${body.length}\r\n`;
  head += '\r\n';
  return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head);
}

/** Where a complete response ends in buf, with its status; null while incomplete. */
export function parseResponse(buf: Buffer): { end: number; status: number } | null {
  const headerEnd = buf.indexOf(CRLF2);
  if (headerEnd < 0) return null;
  const status = Number(buf.toString('latin1', 9, 12));
  const head = buf.toString('latin1', 0, headerEnd).toLowerCase();
  const bodyStart = headerEnd + 4;
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return buf.length >= end ? { end, status } : null;
  }
  if (/\r\ntransfer-encoding: *chunked/.test(head)) {
    let at = bodyStart;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at, 'latin1');
      if (lineEnd < 0) return null;
      const size = parseInt(buf.toString('latin1', at, lineEnd), 16);
      const next = lineEnd + 2 + size + 2;
      if (buf.length < next) return null;
      if (size === 0) return { end: next, status };
      at = next;
    }
  }
  // 204/304 and bodies without framing that our targets never send.
  return { end: bodyStart, status };
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const { hostname, port } = new URL(spec.url);
  const request = buildRequest(spec);
  const started = performance.now();
  const recordFrom = started + spec.warmupMs;
  const deadline = recordFrom + spec.durationMs;
  const latencies: number[] = [];
  let unexpected = 0;
  let firstUnexpected: string | null = null;
  let socketErrors = 0;
  let allRequests = 0;

  const connection = () =>
    new Promise<void>((resolve) => {
      let pending: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      let finished = false;
      const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
      const send = () => {
        sentAt = performance.now();
        socket.write(request);
      };
      const finish = () => {
        if (finished) return;
        finished = true;
        socket.destroy();
        resolve();
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        const response = parseResponse(pending);
        if (!response) return;
        const now = performance.now();
        allRequests++;
        if (now >= recordFrom) {
          latencies.push(now - sentAt);
          if (response.status !== spec.expectStatus) {
            unexpected++;
            firstUnexpected ??= `${response.status} ${pending.toString('utf8', 0, Math.min(response.end, 600))}`;
          }
        }
        pending = pending.subarray(response.end);
        if (now >= deadline) finish();
        else send();
      });
      socket.on('error', () => {
        socketErrors++;
      });
      socket.on('close', () => {
        if (finished) return;
        finished = true;
        // The server closed the connection (or it failed): carry on with a new one.
        if (performance.now() < deadline) void connection().then(resolve);
        else resolve();
      });
    });

  await Promise.all(Array.from({ length: spec.connections }, connection));
  const seconds = (performance.now() - recordFrom) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const pct = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN);
  return {
    requests: sorted.length,
    allRequests,
    seconds,
    rps: sorted.length / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    unexpected,
    firstUnexpected,
    socketErrors,
  };
}
