/** A place of data/places.bin as `readPlaces` returns it. */
export interface PlaceRecord {
  lat: number;
  lon: number;
  population: number;
  /** ISO 3166-1 alpha-2, upper case. */
  cc: string;
}

/** The places of a places file, in file order. */
export function readPlaces(file: string): PlaceRecord[];
