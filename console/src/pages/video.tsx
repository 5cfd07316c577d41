// Not built yet: the page says so.
import type { PageProps } from "../main.js";

export function VideoPage(_props: PageProps) {
  return (
    <>
      <h1>Video</h1>
      <p class="empty">This page is not built yet.</p>
    </>
  );
}
