/**
 * The choice among regional deployments: probe them all, use the fastest that answered, move a
 * failing one to the back of the line, and probe again after `reprobeMs`.
 *
 * The first call waits for the first probe (it has nothing better to go on); later probes run
 * in the background while calls keep using the last ranking.
 */

/** One regional endpoint as the health check shows it. */
export interface RegionStatus {
  url: string;
  /** Whether the last probe or call found it answering. */
  up: boolean;
  /** Round trip of the last probe, ms; undefined when it did not answer or was never probed. */
  latency_ms: number | undefined;
}

/** Measures one endpoint's round trip in ms, or undefined when it gives no usable answer. */
export type Probe = (url: URL) => Promise<number | undefined>;

interface Region {
  url: URL;
  up: boolean;
  latencyMs: number | undefined;
}

/** See the module comment. */
export class Regions {
  #ranked: Region[];
  #probedAt: number | undefined;
  #probing: Promise<void> | undefined;

  constructor(
    urls: readonly URL[],
    private readonly probe: Probe,
    private readonly reprobeMs: number,
    private readonly now: () => number,
  ) {
    this.#ranked = urls.map((url) => ({ url, up: true, latencyMs: undefined }));
  }

  /** The endpoints in the order to try them: fastest answering first, failed ones last. */
  async ordered(): Promise<readonly URL[]> {
    if (this.#ranked.length > 1) {
      if (this.#probedAt === undefined) await this.#probeAll();
      else if (this.now() - this.#probedAt >= this.reprobeMs) void this.#probeAll();
    }
    return this.#ranked.map((r) => r.url);
  }

  /** A call to `url` failed: it goes to the back until a probe finds it answering again. */
  failed(url: URL): void {
    const at = this.#ranked.findIndex((r) => r.url === url);
    if (at < 0) return;
    const [region] = this.#ranked.splice(at, 1) as [Region];
    region.up = false;
    this.#ranked.push(region);
  }

  /** A call to `url` got an answer. */
  answered(url: URL): void {
    const region = this.#ranked.find((r) => r.url === url);
    if (region) region.up = true;
  }

  /** Every endpoint in its current order. */
  status(): RegionStatus[] {
    return this.#ranked.map((r) => ({ url: r.url.href, up: r.up, latency_ms: r.latencyMs }));
  }

  #probeAll(): Promise<void> {
    this.#probing ??= (async () => {
      const latencies = await Promise.all(this.#ranked.map((r) => this.probe(r.url)));
      this.#ranked.forEach((r, i) => {
        r.latencyMs = latencies[i];
        r.up = r.latencyMs !== undefined;
      });
      // Answering regions by round trip; the silent ones keep their order behind them.
      this.#ranked = [
        ...this.#ranked
          .filter((r) => r.latencyMs !== undefined)
          .sort((a, b) => (a.latencyMs as number) - (b.latencyMs as number)),
        ...this.#ranked.filter((r) => r.latencyMs === undefined),
      ];
      this.#probedAt = this.now();
    })().finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }
}
