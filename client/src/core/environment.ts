// X-Environment-Data: base64 of a JSON object, sent once per process (CONTRACT.md).

export const SDK_NAME = '@tally/client';
export const SDK_VERSION = '0.1.0';

/** base64 of the UTF-8 JSON, with the platform's own btoa (Node 16+, every browser). */
export function encodeEnvironment(env: Record<string, unknown>): string {
  const bytes = new TextEncoder().encode(JSON.stringify(env));
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary);
}

/** A timer that does not keep a Node process alive (no-op in browsers). */
export function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
