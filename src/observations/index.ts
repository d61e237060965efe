/**
 * GPS submissions for the learning pipeline.
 */
export {
  type Observation,
  ObservationStore,
  type ObservationStoreOptions,
  tokenHash,
} from './store.js';
