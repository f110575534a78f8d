/**
 * The error `fn` throws, when it is a `type`; fails the test otherwise (another error is rethrown,
 * no error at all fails naming the type), so a test can go on to assert its fields.
 */
export function thrownBy<E extends Error>(fn: () => unknown, type: new (...args: never[]) => E): E {
  try {
    fn();
  } catch (err) {
    if (err instanceof type) return err;
    throw err;
  }
  throw new Error(`expected a ${type.name}`);
}
