import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["src/**/*.spec.ts", "gateway/**/*.spec.ts", "actors/**/*.spec.ts"] } },
      { test: { name: "api", include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000, pool: "forks" } },
    ],
  },
});
