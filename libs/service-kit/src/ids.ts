import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';

/** Namespace of every id gpunet derives (uuid v5). Never change it: derived ids are idempotency keys. */
export const GPUNET_ID_NAMESPACE = '6f1d3c3e-3b0a-5d4e-9a57-2f0d2b7c9e11';

/** A deterministic id from its parts: the same parts always give the same uuid. */
export function derivedId(...parts: readonly string[]): string {
  return uuidv5(parts.join('\u001f'), GPUNET_ID_NAMESPACE);
}

/** A fresh, time-ordered id. */
export function newId(): string {
  return uuidv7();
}
