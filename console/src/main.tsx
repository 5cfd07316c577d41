// The console's shell: who is signed in (UserService/GetMe through the session cookie), the
// organization and hosting app it works in, the navigation, and the page of the location's hash.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Role } from "../../src/gen/media/v1/user_pb.js";
import { api, problemOf, useOrganization } from "./api.js";
import type { ComponentType } from "preact";
import { JobsPage } from "./pages/jobs.js";
import { KeysPage } from "./pages/keys.js";
import { OrganizationPage } from "./pages/organization.js";
import { OriginsPage } from "./pages/origins.js";
import { PresetsPage } from "./pages/presets.js";
import { UsagePage } from "./pages/usage.js";
import { VideoPage } from "./pages/video.js";
import { VideosPage } from "./pages/videos.js";
import { WebhooksPage } from "./pages/webhooks.js";
import type { PageProps, Workspace } from "./workspace.js";

type Loaded = { kind: "loading" } | { kind: "signed-out" } | { kind: "problem"; message: string } | { kind: "ready"; workspace: Workspace };

async function load(): Promise<Loaded> {
  try {
    const me = (await api.users.getMe({})).user;
    const org = me?.organizations.find((o) => o.isActive) ?? me?.organizations[0];
    if (!me?.user || !org) return { kind: "problem", message: "You are signed in but belong to no organization yet: ask an owner to add you." };
    useOrganization(org.orgId);
    const { apps } = await api.apps.list({ pagination: { limit: 100 } });
    const app = apps.find((a) => a.hostingEnabled) ?? apps[0];
    if (!app) return { kind: "problem", message: "This organization has no app yet." };
    return {
      kind: "ready",
      workspace: {
        email: me.user.email,
        userId: me.user.id,
        organizationId: org.orgId,
        organizationName: org.orgName,
        role: Role[org.role].toLowerCase(),
        appId: app.id,
      },
    };
  } catch (e) {
    const p = problemOf(e);
    return p.signedOut ? { kind: "signed-out" } : { kind: "problem", message: p.message };
  }
}

/** The pages, by hash prefix; the first is the default. `nav: false` pages are reached from another. */
const PAGES: readonly { hash: string; title: string; page: ComponentType<PageProps>; nav: boolean }[] = [
  { hash: "#/videos/", title: "Video", page: VideoPage, nav: false },
  { hash: "#/videos", title: "Videos", page: VideosPage, nav: true },
  { hash: "#/jobs", title: "Jobs", page: JobsPage, nav: true },
  { hash: "#/presets", title: "Presets", page: PresetsPage, nav: true },
  { hash: "#/origins", title: "Origins", page: OriginsPage, nav: true },
  { hash: "#/webhooks", title: "Webhooks", page: WebhooksPage, nav: true },
  { hash: "#/keys", title: "API keys", page: KeysPage, nav: true },
  { hash: "#/organization", title: "Organization", page: OrganizationPage, nav: true },
  { hash: "#/usage", title: "Usage", page: UsagePage, nav: true },
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/videos");
  useEffect(() => {
    const on = () => setHash(location.hash || "#/videos");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function App() {
  const [state, setState] = useState<Loaded>({ kind: "loading" });
  const hash = useHash();
  useEffect(() => {
    void load().then(setState);
  }, []);
  if (state.kind === "loading") return <p class="loading">Loading the console…</p>;
  if (state.kind === "signed-out") {
    return (
      <main class="narrow">
        <h1>media</h1>
        <p>Sign in to upload and manage your videos.</p>
        <p>
          <a class="button" href="/auth/login?return_to=/">
            Sign in
          </a>
        </p>
        <p class="hint">
          Running the embedded server? Open the one-time link <code>media serve</code> printed, or make one with{" "}
          <code>media login-link --email you@example.com</code>.
        </p>
      </main>
    );
  }
  if (state.kind === "problem") {
    return (
      <main class="narrow">
        <h1>media</h1>
        <p role="alert">{state.message}</p>
      </main>
    );
  }
  const page = PAGES.find((p) => hash.startsWith(p.hash)) ?? PAGES[1]!;
  const Page = page.page;
  const rest = hash.slice(page.hash.length).replace(/^\//, "");
  document.title = `${page.title} · media console`;
  return (
    <>
      <header>
        <nav aria-label="Console">
          <span class="brand">media</span>
          {PAGES.filter((p) => p.nav).map((p) => (
            <a href={p.hash} aria-current={p === page || (page.hash.startsWith(p.hash) && !page.nav) ? "page" : undefined}>
              {p.title}
            </a>
          ))}
          <span class="spacer" />
          <span class="who">
            {state.workspace.organizationName} · {state.workspace.email}
          </span>
          <a href="/account">Account</a>
        </nav>
      </header>
      <main>
        <Page workspace={state.workspace} rest={rest} key={hash} />
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
