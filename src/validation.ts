// Request validation that names the field at fault; every limit comes from LIMITS, one source.
import { invalid, type FieldViolation } from "./errors.js";
import { hasPrefix, type Prefix } from "./ids.js";

export const LIMITS = {
  name: 255,
  description: 1000,
  revokeReason: 500,
  userName: 100,
  url: 2048,
  slugMin: 3,
  slugMax: 64,
  idempotencyKey: 255,
} as const;

export class Check {
  readonly violations: FieldViolation[] = [];

  add(field: string, description: string): this {
    this.violations.push({ field, description });
    return this;
  }

  required(field: string, value: string): this {
    if (value.trim() === "") this.add(field, "is required");
    return this;
  }

  length(field: string, value: string | undefined, min: number, max: number): this {
    if (value === undefined) return this;
    const n = [...value].length;
    if (n < min || n > max) this.add(field, min > 0 ? `must be ${min} to ${max} characters` : `must be at most ${max} characters`);
    return this;
  }

  id(field: string, value: string, prefix: Prefix, required = true): this {
    if (value === "") return required ? this.add(field, "is required") : this;
    if (!hasPrefix(value, prefix)) this.add(field, `must be an id starting with ${prefix}`);
    return this;
  }

  httpsUrl(field: string, value: string): this {
    if (value.length > LIMITS.url) return this.add(field, `must be at most ${LIMITS.url} characters`);
    try {
      if (new URL(value).protocol !== "https:") this.add(field, "must be an https:// URL");
    } catch {
      this.add(field, "must be a valid URL");
    }
    return this;
  }

  email(field: string, value: string | undefined): this {
    if (value !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value)) this.add(field, "must be an email address");
    return this;
  }

  /** Throws invalid_argument listing every violation found. */
  done(): void {
    if (this.violations.length > 0) throw invalid(this.violations);
  }
}
