// The bench's physical floor: a bare node:http handler with the same mongodb driver as the
// service, on the same database, doing the least the endpoint can do: one round trip, settings
// read (or written) by user id, no authentication, validation, framework or logging. Plain
// JavaScript so that nothing (no loader, no source maps) runs besides node itself.
//
//   node bench/floor-server.mjs --port 3902 --mongo-uri mongodb://127.0.0.1:27017/bench --user bench
import http from 'node:http';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';

const { values } = parseArgs({
  options: { port: { type: 'string' }, 'mongo-uri': { type: 'string' }, user: { type: 'string', default: 'bench' } },
});
const client = new MongoClient(values['mongo-uri']);
await client.connect();
const settings = client.db().collection('settings');
const userId = values.user;
// Writes go to a document of their own so the service's stored (encrypted) settings stay intact.
const writeUserId = `${userId}-floor`;

const send = (res, status, payload) => {
  const body = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

const server = http.createServer((req, res) => {
  if (req.url === '/alive') return send(res, 200, { status: 'ok' });
  if (req.url !== '/settings') return send(res, 404, { detail: 'Not Found' });
  if (!req.headers['x-session-api-key']) return send(res, 401, { detail: 'Unauthorized' });
  if (req.method === 'GET') {
    settings.findOne({ userId }).then(
      (doc) => (doc ? send(res, 200, doc) : send(res, 404, { error: 'Settings not found' })),
      () => send(res, 500, { detail: 'Internal Server Error' }),
    );
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const set = { ...JSON.parse(Buffer.concat(chunks).toString()), updatedAt: new Date() };
    settings.updateOne({ userId: writeUserId }, { $set: set }, { upsert: true }).then(
      () => send(res, 200, { message: 'Settings stored' }),
      () => send(res, 500, { detail: 'Internal Server Error' }),
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(values.port), '127.0.0.1', () => process.stdout.write(`floor: ready http://127.0.0.1:${values.port}\n`));
process.on('SIGTERM', () => server.close(() => client.close().then(() => process.exit(0))));
