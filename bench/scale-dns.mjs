// Preloaded into the replicas of npm run bench:scale (node --import): the cluster DNS of the
// simulated cluster. A sandbox's in-cluster name (sandbox-<id>.<namespace>.svc.cluster.local)
// resolves to SCALE_AGENTS_IP, where the bench serves every sandbox's agent server; kwok pods
// run nothing, and without this the names fail to resolve, sometimes only after the
// agent-server client's timeout. Every other name resolves as usual.
import dns from 'node:dns';

const address = process.env.SCALE_AGENTS_IP;
const lookup = dns.lookup;
dns.lookup = function clusterLookup(hostname, options, callback) {
  if (!address || typeof hostname !== 'string' || !hostname.endsWith('.svc.cluster.local')) {
    return lookup.call(this, hostname, options, callback);
  }
  const done = typeof options === 'function' ? options : callback;
  const all = typeof options === 'object' && options !== null && options.all;
  process.nextTick(() => (all ? done(null, [{ address, family: 4 }]) : done(null, address, 4)));
  return {};
};
