// Not built yet: the page says so.
import type { PageProps } from "../main.js";

export function UsagePage(_props: PageProps) {
  return (
    <>
      <h1>Usage</h1>
      <p class="empty">This page is not built yet.</p>
    </>
  );
}
