// The floor of event delivery (bench/event-delivery.ts): a bare node:http server that keeps
// server-sent-event subscribers by channel and writes each POSTed body to the channel's
// subscribers at once: no authentication, storage, ordering or framework. Plain JavaScript so
// that nothing runs besides node itself.
//
//   node bench/event-floor.mjs      (prints "event-floor: ready <url>")
import http from 'node:http';

const channels = new Map();
const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const channel = url.searchParams.get('c') ?? '';
  if (req.method === 'GET' && url.pathname === '/subscribe') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': connected\n\n');
    const subscribers = channels.get(channel) ?? new Set();
    subscribers.add(res);
    channels.set(channel, subscribers);
    req.on('close', () => subscribers.delete(res));
    return;
  }
  if (req.method === 'POST' && url.pathname === '/publish') {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const message = `data: ${Buffer.concat(chunks).toString()}\n\n`;
      for (const subscriber of channels.get(channel) ?? []) subscriber.write(message);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
    });
    return;
  }
  res.writeHead(404).end();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`event-floor: ready http://127.0.0.1:${server.address().port}\n`));
