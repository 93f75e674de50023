/**
 * The test/demo seam onto LAZY objects, client side (`ClientSession.lifecycle`): the `--lifecycle*`
 * demos of `verbus call` and the fabric tests read the last object reference the client read,
 * and may hold back its RECLAIM so that the server's TTL sweep has to free the object. Nothing on
 * the call path depends on it besides `skipReclaim`.
 *
 * Ownership and threading: one probe per client session, on its JS thread; plain fields.
 * @module
 */

/** See the module documentation. */
export class ObjectLifecycleProbe {
  /** Object id of the last LAZY object read (-1 before the first). */
  lastObject = -1;
  /** Its generation. */
  lastGeneration = 0;
  /** When true, objects read are not reclaimed (the server's TTL sweep must free them). */
  skipReclaim = false;

  /** Records the reference of a LAZY object just read. */
  observe(object: number, generation: number): void {
    this.lastObject = object;
    this.lastGeneration = generation;
  }
}
