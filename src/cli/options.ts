/**
 * Flag parsing helpers: every bad value becomes a commander InvalidArgumentError, which the
 * CLI turns into a one-line message and exit code 2 (CONTRACT §1).
 */
import { InvalidArgumentError } from 'commander';

/** A TCP port, 0–65535 (0 = pick a free one). */
export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) {
    throw new InvalidArgumentError(`'${value}' is not a port number (0-65535).`);
  }
  return n;
}

/** A positive whole number. */
export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1)
    throw new InvalidArgumentError(`'${value}' is not a positive whole number.`);
  return n;
}

/** Comma-separated location names, each 1–64 of [A-Za-z0-9_.-]. */
export function parseLocations(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw new InvalidArgumentError('give at least one location name.');
  for (const n of names) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(n)) {
      throw new InvalidArgumentError(`'${n}' is not a location name (letters, digits, _ . -).`);
    }
  }
  if (new Set(names).size !== names.length)
    throw new InvalidArgumentError('location names must differ.');
  return names;
}

/** One location name. */
export function parseLocation(value: string): string {
  return parseLocations(value)[0] as string;
}

/** `HOST:PORT` of a coordinator's gRPC endpoint. */
export function parseHostPort(value: string): string {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  if (!m || Number(m[2]) > 65535 || Number(m[2]) === 0) {
    throw new InvalidArgumentError(`'${value}' is not HOST:PORT.`);
  }
  return value;
}
