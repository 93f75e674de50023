/**
 * The methods a server listed in its hello, by name: "service/method" → the index a request
 * descriptor carries. A caller usually names the same method call after call, so the last lookup
 * is kept and answered without a map access or a string built.
 *
 * Threading: one JS thread (the session's).
 * @module
 */

/** Method indexes by service and method name (built once per session). */
export class MethodTable {
  readonly #byService = new Map<string, Map<string, number>>();
  #lastService = "";
  #lastMethod = "";
  #lastIndex = -1;

  /** @param methods "service/method" names; a method's index is its position */
  constructor(methods: readonly string[]) {
    methods.forEach((m, i) => {
      const cut = m.lastIndexOf("/"), service = m.slice(0, cut);
      let byName = this.#byService.get(service);
      if (!byName) this.#byService.set(service, byName = new Map());
      byName.set(m.slice(cut + 1), i);
    });
  }

  /** The index of "service/method", or -1 when the server did not list it. */
  indexOf(service: string, method: string): number {
    if (service === this.#lastService && method === this.#lastMethod) return this.#lastIndex;
    const i = this.#byService.get(service)?.get(method) ?? -1;
    this.#lastService = service;
    this.#lastMethod = method;
    this.#lastIndex = i;
    return i;
  }
}
