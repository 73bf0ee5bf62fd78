// The loopback fakes that sandboxes must reach (the stub LLM, the fake git host): each registers
// its port while it runs, and the test apps hand the list to the service as SANDBOX_HOST_PORTS,
// the operator's allowance for host services on loopback (an isolated sandbox reaches no other
// host port: src/sandbox/isolation/sandbox-network.ts). A listener a test opens itself is not in it.
const ports = new Set<number>();

export function allowForSandboxes(port: number): () => void {
  ports.add(port);
  return () => ports.delete(port);
}

/** The registered ports, as SANDBOX_HOST_PORTS reads them. */
export function sandboxHostPorts(): string {
  return [...ports].join(',');
}
