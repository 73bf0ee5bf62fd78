// Smoke test of the local Kubernetes control plane used by the Kubernetes sandbox tests:
// a Pod bound to the kwok Node runs and is deleted, and an API server outage is survived
// with the data intact (it lives in etcd).
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeControlPlane, type KubeControlPlane } from './helpers/kube-control-plane.js';

let cp: KubeControlPlane | undefined;
let core: CoreV1Api;
const namespace = `smoke-${Date.now().toString(36)}`;

beforeAll(async () => {
  const t0 = Date.now();
  cp = await startKubeControlPlane();
  core = cp.kubeConfig.makeApiClient(CoreV1Api);
  console.log(`kube control plane started in ${((Date.now() - t0) / 1000).toFixed(2)}s`);
}, 15 * 60_000); // a machine without the cache builds kube-apiserver, etcd and kwok first (~7.5 min)

afterAll(async () => {
  await cp?.stop();
}, 60_000);

/** Polls until check() returns true, at most timeoutMs. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const isNotFound = (error: unknown) => error instanceof ApiException && error.code === 404;

describe('local kube control plane', () => {
  it('runs a Pod on the kwok node and deletes it', async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'p1' },
        spec: { nodeName: cp!.nodeName, containers: [{ name: 'c', image: 'busybox' }] },
      },
    });

    await eventually('Pod Running and Ready', async () => {
      const pod = await core.readNamespacedPod({ namespace, name: 'p1' });
      const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      return pod.status?.phase === 'Running' && ready === 'True';
    });

    // A Pod bound to a node is only removed once the "kubelet" (kwok) confirms it.
    await core.deleteNamespacedPod({ namespace, name: 'p1' });
    await eventually('Pod gone', async () => {
      try {
        await core.readNamespacedPod({ namespace, name: 'p1' });
        return false;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    });
  });

  it('survives an API server restart with its data', async () => {
    await cp!.stopApiServer();
    const failure = await core.listNamespace().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(String((failure as Error).message)).toMatch(/ECONNREFUSED/);

    await cp!.startApiServer();
    const list = await core.listNamespace();
    expect(list.items.map((ns) => ns.metadata?.name)).toContain(namespace);
  });
});
