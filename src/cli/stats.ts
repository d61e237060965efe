/**
 * `whereabouts stats --db DIR [--json]`: what each network's own data says of its scale, as
 * the database stores it (docs/positioning.md, "Each network's scale"): its cells' stored
 * ranges and sightings, its sites' spacing and sector offsets, how many of its cells were
 * learned, how many site masts the learner fitted from timing advances and how many learned
 * cells it placed by received level; then the radius
 * model `whereabouts calibrate` stored, if any (`--json`: its `calibration` key). A database written before the statistics existed says so (exit 1).
 */
import { existsSync } from 'node:fs';
import { formatModel, storedRadiusModel } from '../calibration/radius.js';
import { Engine, type NetworkReading, type NetworkStats, type Quantiles } from '../engine.js';
import { STATIONS_ONLY } from '../engine-options.js';
import { parseFlags, UsageError } from './usage.js';

/** Runs `whereabouts stats`; resolves to the exit code. */
export async function runStats(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { db: { type: 'string' }, json: { type: 'boolean' } });
  if (values.db === undefined) throw new UsageError('stats needs --db DIR');
  if (positionals.length > 0) throw new UsageError(`stats takes no files (got ${positionals.join(' ')})`);
  if (!existsSync(values.db)) throw new Error(`${values.db}: no such directory`);
  const engine = await Engine.open({ db: values.db, ...STATIONS_ONLY });
  try {
    const stats = engine.networkStats();
    if (stats === null) {
      process.stderr.write(
        `whereabouts: ${values.db} has no network statistics (written by an older version); ` +
          're-import it or run `whereabouts compact` to compute them\n',
      );
      return 1;
    }
    const calibration = storedRadiusModel(values.db) ?? null;
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ ...stats, calibration })}\n`);
      return 0;
    }
    process.stdout.write(formatStats(stats.networks, stats.version));
    process.stdout.write(
      calibration
        ? `\nradius model (whereabouts calibrate):\n${formatModel(calibration)}\n`
        : "\nno radius model (whereabouts calibrate): answers carry the engine's own radii\n",
    );
    return 0;
  } finally {
    engine.close();
  }
}

/** The three quantiles as "p10 / p50 / p90", or "-". */
function q(x: Quantiles | null, digits = 0): string {
  if (x === null) return '-';
  return [x.p10, x.p50, x.p90].map((v) => v.toFixed(digits)).join(' / ');
}

/** One line a network, with a header. */
export function formatStats(networks: NetworkStats[], version: number): string {
  const header = [
    'network',
    'cells',
    'learned',
    'range m (p10/p50/p90)',
    'samples (p10/p50/p90)',
    'sites',
    'site spacing m (p10/p50/p90)',
    'sector offset / range (p10/p50/p90)',
    'held-out sector m (68%)',
    'cells on a shared position',
    'learned masts',
    'cells by level',
    'cells by advance',
    'read as',
  ];
  const rows = networks.map((n) => [
    `${n.radio} ${n.mcc} ${n.mnc}`,
    String(n.cells),
    String(n.learned),
    q(n.range_m),
    q(n.samples),
    String(n.sites),
    q(n.site_spacing_m),
    q(n.sector_offset, 2),
    n.site_holdout_m == null ? '-' : `${Math.round(n.site_holdout_m)} (${n.site_holdouts ?? 0})`,
    String(n.colocated + n.colocated_learned),
    String(n.masts?.length ?? 0),
    String(n.levels?.length ?? 0),
    String(n.advances?.length ?? 0),
    readAs(n.read_as),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => `${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
  return `${[`network statistics (version ${version}), ${networks.length} networks`, line(header), ...rows.map(line)].join('\n')}\n`;
}

/** The solver's reading of a network in a few words (docs/positioning.md). */
function readAs(r: NetworkReading | undefined): string {
  if (!r) return '-';
  const parts: string[] = [];
  if (r.published_spacing_m !== null)
    parts.push(
      `published masts${r.averaged_rows_published ? '' : ' (its exact rows)'}, ${Math.round(r.published_spacing_m)} m apart${r.published_spacing_spread !== null ? ` (median over 10% quantile ${r.published_spacing_spread.toFixed(2)})` : ''}`,
    );
  if (r.spacing_per_range !== null) parts.push(`ranges in spacing units (${r.spacing_per_range.toFixed(2)})`);
  if (r.uncounted) parts.push('no sample counts');
  if (r.unranged) parts.push('no ranges');
  if (!r.ids_name_sites) parts.push('ids name no sites');
  return parts.length > 0 ? parts.join('; ') : 'as stored';
}
