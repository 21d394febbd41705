/**
 * Waits for `promise` (its rejection counts as settled), but no longer than `ms`; resolves true
 * when it settled in time. The timer keeps the process alive while it runs and is cleared after.
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = promise.then(() => true, () => true);
  const late = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}
