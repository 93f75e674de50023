/**
 * A git revision of this repository as a directory a harness can run: the revision's files
 * (`git archive`, so the shared checkout's index, work tree and worktree list are untouched)
 * in a temporary directory, this checkout's `node_modules` linked in (the same pinned runtimes
 * and npm packages on both sides, so two sides differ only in verbus), and the revision's own C
 * helper built into its `build/` (each side runs its own native code). Used by the A/B harness.
 * Control path of a bench script; one JS thread; blocks while git, tar and make run.
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** One side of a comparison: where it runs from and what it is. */
export interface Side {
  /** The directory to run (a checkout, or a revision's files in the temporary directory). */
  readonly root: string;
  /** What the report names it: the directory, or `REV (commit)`. */
  readonly label: string;
  /** The commit, when the side is a revision. */
  readonly commit?: string;
}

/** Temporary trees of revisions; {@link RevisionTrees.close} removes them all. */
export class RevisionTrees {
  readonly #repo: string;
  #tmp: string | null = null;

  /** `repo`: the checkout whose history names the revisions (and whose node_modules is linked). */
  constructor(repo: string) {
    this.#repo = repo;
  }

  /**
   * `spec` as a side: an existing directory is used as it is (a checkout, uncommitted changes
   * included); anything else is a revision of the repository (`HEAD`, `HEAD~3`, a commit, a
   * branch), extracted and built. Throws naming `spec` when it is neither.
   */
  side(spec: string): Side {
    const dir = resolve(spec);
    if (existsSync(dir) && statSync(dir).isDirectory()) return { root: dir, label: dir };
    let commit: string;
    try {
      commit = this.#git(["rev-parse", "--verify", "--quiet", `${spec}^{commit}`]).trim();
    } catch {
      throw new Error(`${spec}: neither a directory nor a revision of ${this.#repo}`);
    }
    const root = join(this.#tmpDir(), commit.slice(0, 12));
    if (!existsSync(root)) {
      mkdirSync(root);
      const tar = execFileSync("git", ["-C", this.#repo, "archive", "--format=tar", commit], {
        maxBuffer: 1 << 30,
      });
      execFileSync("tar", ["-x", "-C", root], { input: tar });
      symlinkSync(join(this.#repo, "node_modules"), join(root, "node_modules"));
      execFileSync("make", ["-s", "-C", join(root, "c-helpers"), `OUT=${join(root, "build")}`], {
        stdio: ["ignore", "ignore", "inherit"],
      });
    }
    return { root, label: `${spec} (${commit.slice(0, 12)})`, commit };
  }

  /** Removes every extracted revision. Safe twice. */
  close(): void {
    if (this.#tmp) rmSync(this.#tmp, { recursive: true, force: true });
    this.#tmp = null;
  }

  #tmpDir(): string {
    this.#tmp ??= mkdtempSync(join(tmpdir(), "verbus-ab-"));
    return this.#tmp;
  }

  #git(args: string[]): string {
    return execFileSync("git", ["-C", this.#repo, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  }
}
