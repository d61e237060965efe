/**
 * Station database generations shared by several servers on one PostgreSQL store: GPS
 * submissions folded by one elected compactor, published, fetched and switched to by every
 * server (docs/deploy.md, "Learning across servers").
 */
export { COMPACTOR_LOCK, SharedLearning, type SharedLearningOptions } from './follow.js';
export { installedPublication, installPublication } from './install.js';
export {
  type ChangeDone,
  foldSubmissions,
  type SharedChange,
  type SharedOutcome,
  updateShared,
  workDirOf,
} from './round.js';
export { PG_LEARNING_SCHEMA_VERSION } from './schema.js';
export { type Cursor, GenerationStore, type Publication, PublishConflict } from './store.js';
