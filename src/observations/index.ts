/**
 * GPS submissions for the learning pipeline.
 */
export {
  type Observation,
  type ObservationGps,
  ObservationStore,
  type ObservationStoreOptions,
  tokenHash,
} from './store.js';
