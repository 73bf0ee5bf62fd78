// Kubernetes-style quantities, as sandbox specs write their limits: bytes ("512Mi", "4Gi", "1G",
// "1500000") and cores ("2", "500m"). The process runtime reads them into numbers; the Kubernetes
// runtime passes them through as written.

const BYTE_SUFFIXES: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

const BYTES = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const CORES = /^(\d+(?:\.\d+)?)(m)?$/;

/** Bytes of a quantity such as "4Gi"; null when it is not one. */
export function parseBytes(quantity: string): number | null {
  const match = BYTES.exec(quantity.trim());
  if (!match) return null;
  const bytes = Math.round(Number(match[1]) * BYTE_SUFFIXES[match[2] ?? '']!);
  return bytes > 0 ? bytes : null;
}

/** Cores of a quantity such as "2" or "500m"; null when it is not one. */
export function parseCores(quantity: string): number | null {
  const match = CORES.exec(quantity.trim());
  if (!match) return null;
  const cores = Number(match[1]) / (match[2] ? 1000 : 1);
  return cores > 0 ? cores : null;
}
