// A TLS-terminating reverse proxy on 127.0.0.1, as a deployment puts in front of the service:
// HTTPS (a self-signed certificate made with openssl for this run, never stored in the
// repository) to plain HTTP, Host kept and X-Forwarded-Proto: https added, WebSocket upgrades
// piped through. The service trusts it with TRUST_PROXY=loopback. Browsers reach it from
// contexts opened with `ignoreHTTPSErrors`. Needed where a client insists on https, as Agent
// Canvas does for the device flow's verification page.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface TlsFront {
  /** https://127.0.0.1:<port> */
  url: string;
  /** Where requests go from now on (the service's http://127.0.0.1:<port>). */
  forwardTo(target: string): void;
  close(): Promise<void>;
}

function selfSignedCertificate(hostname: string | null): { key: Buffer; cert: Buffer } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tls-front-'));
  try {
    const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', `subjectAltName=IP:127.0.0.1${hostname ? `,DNS:${hostname}` : ''}`, '-keyout', key, '-out', cert,
    ], { stdio: 'ignore' }); // prettier-ignore
    return { key: fs.readFileSync(key), cert: fs.readFileSync(cert) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** hostname: the name the front is reached by (a browser maps it to 127.0.0.1); its url says it. */
export async function startTlsFront(hostname: string | null = null): Promise<TlsFront> {
  let target: URL | undefined;
  const forwardedHeaders = (req: http.IncomingMessage) => ({ ...req.headers, 'x-forwarded-proto': 'https' });
  const server = https.createServer(selfSignedCertificate(hostname), (req, res) => {
    if (!target) return void res.writeHead(503).end('no target yet');
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: forwardedHeaders(req) },
      (answer) => (res.writeHead(answer.statusCode ?? 502, answer.rawHeaders), answer.pipe(res)),
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end('upstream failed')));
    req.pipe(upstream);
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    if (!target) return void socket.destroy();
    const upstream = net.connect(Number(target.port), target.hostname, () => {
      const lines = Object.entries(forwardedHeaders(req)).flatMap(([name, value]) =>
        (Array.isArray(value) ? value : [value ?? '']).map((v) => `${name}: ${v}`),
      );
      upstream.write(`${req.method} ${req.url} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    const end = () => (upstream.destroy(), socket.destroy());
    upstream.on('error', end);
    socket.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://${hostname ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`,
    forwardTo: (url) => void (target = new URL(url)),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
