/**
 * GPS submissions for the learning pipeline: in SQLite beside one server, or in PostgreSQL
 * shared by several (docs/deploy.md).
 */
export { PgObservationStore, type PgObservationStoreOptions } from './pg-store.js';
export {
  type Observation,
  type ObservationRow,
  type ObservationStorage,
  ObservationStore,
  type ObservationStoreOptions,
  observationRows,
  tokenHash,
} from './store.js';
