"""Writes questions.json: the phrasing-family question set for prompt recall (issue 34, item 5).

The memory folder is `../recall_paraphrase/corpus.json` (the same 8 projects and 88 facts); the
questions are new, written for issue 34 and tagged by phrasing family and language. Tuning may
look only at the families listed in TUNE_FAMILIES; the others are measured once, at the end.
Run: python benchmarks/data/recall_families/write_questions.py
"""

import json
from pathlib import Path

# (family, project asked from, question, expected fact id or None)
Q = [
    # ---- en-howto: "how do I ..." -------------------------------------------------------------
    ("en-howto", "clinicbook", "how do I get a release out to production?", "clinicbook-promote"),
    ("en-howto", "clinicbook", "how do I start the local database for this app?", "clinicbook-localdb"),
    ("en-howto", "pgsnap", "how do I build the binaries we ship?", "pgsnap-dist"),
    ("en-howto", "pgsnap", "how do I run the tests that hit a real postgres?", "pgsnap-integration"),
    ("en-howto", "rowpack", "how do I publish a new version of the crate?", "rowpack-publish"),
    ("en-howto", "beacon-fw", "how do I flash the board?", "beacon-flash"),
    ("en-howto", "trailmate", "how do I update the screenshot test images?", "trailmate-paparazzi"),
    ("en-howto", "platform-gitops", "how do I make flux pick up my change immediately?", "platform-flux"),
    ("en-howto", "platform-gitops", "how do I change one of the encrypted secrets?", "platform-sops"),
    ("en-howto", "tripflow", "how do I run the dagster UI on my machine?", "tripflow-port"),
    ("en-howto", "quillpad", "how do I deploy the collaboration server?", "quillpad-collab"),
    ("en-howto", "quillpad", "how do I apply prisma migrations in prod?", "quillpad-migrate"),
    ("en-howto", "tripflow", "how should I set an env var in my shell?", "user-fish"),
    # ---- en-task: an imperative request that needs the fact ---------------------------------
    ("en-task", "clinicbook", "add a view for the clinic opening hours page", "clinicbook-cbv"),
    ("en-task", "clinicbook", "write a data migration that fills in the new reminder_channel column for 2M rows", "clinicbook-release-timeout"),
    ("en-task", "pgsnap", "add a `prune` subcommand", "pgsnap-cobra"),
    ("en-task", "rowpack", "add an error type for truncated rows", "rowpack-errors"),
    ("en-task", "rowpack", "wrap this pointer cast in an unsafe block", "rowpack-unsafe"),
    ("en-task", "beacon-fw", "build the production image", "beacon-build"),
    ("en-task", "trailmate", "add a migration for the new waypoints table", "trailmate-room"),
    ("en-task", "trailmate", "expose the track list from the ViewModel", "trailmate-flow"),
    ("en-task", "platform-gitops", "add a new ingress for the billing service", "platform-gateway"),
    ("en-task", "tripflow", "write a new transform that aggregates trips per station", "tripflow-polars"),
    ("en-task", "quillpad", "style the new settings panel", "quillpad-tailwind"),
    ("en-task", "quillpad", "add a server action that archives a note", "quillpad-revalidate"),
    ("en-task", "rowpack", "open a PR for this change and write the description", "skill-pr-sections"),
    # ---- en-terse: keyword fragments --------------------------------------------------------
    ("en-terse", "clinicbook", "admin url?", "clinicbook-admin"),
    ("en-terse", "clinicbook", "test settings module", "clinicbook-celery-tests"),
    ("en-terse", "pgsnap", "config file location", "pgsnap-config"),
    ("en-terse", "pgsnap", "homebrew formula update", "pgsnap-brew"),
    ("en-terse", "rowpack", "msrv", "rowpack-msrv"),
    ("en-terse", "beacon-fw", "ncs version", "beacon-ncs"),
    ("en-terse", "beacon-fw", "host unit tests", "beacon-tests"),
    ("en-terse", "trailmate", "min sdk", "trailmate-minsdk"),
    ("en-terse", "platform-gitops", "staging cluster name", "platform-clusters"),
    ("en-terse", "tripflow", "raw bucket", "tripflow-buckets"),
    ("en-terse", "quillpad", "e2e test server", "quillpad-e2e"),
    ("en-terse", "trailmate", "TODO format", "user-todo"),
    # ---- en-situation: "I'm about to ..., anything to know?" (held out) ---------------------
    ("en-situation", "clinicbook", "I'm going to tidy up the appointments migrations folder, it has way too many files", "clinicbook-squash"),
    ("en-situation", "clinicbook", "I'm adding a reminder that shows the appointment time to the patient", "clinicbook-tz"),
    ("en-situation", "pgsnap", "someone asked for a Windows build, I'll look into it", "pgsnap-windows"),
    ("en-situation", "pgsnap", "about to add a deferred f.Close() in the restore path", "pgsnap-errcheck"),
    ("en-situation", "rowpack", "I'm thinking of switching once_cell to LazyLock", "rowpack-msrv"),
    ("en-situation", "rowpack", "I want to quote some benchmark numbers in the README", "rowpack-simd"),
    ("en-situation", "beacon-fw", "I'll move the LED to another pin in the overlay", "beacon-owner"),
    ("en-situation", "beacon-fw", "planning to add a small shell command feature to the firmware", "beacon-rom"),
    ("en-situation", "trailmate", "I'm about to ask for location permission for the tracking feature", "trailmate-bglocation"),
    ("en-situation", "trailmate", "going to add a compose preview for the trip screen", "trailmate-preview"),
    ("en-situation", "platform-gitops", "I'm bumping the instance size of the orders database", "platform-priya"),
    ("en-situation", "platform-gitops", "setting up TLS for a new internal service", "platform-dns01"),
    ("en-situation", "tripflow", "I'm about to backfill the whole of last year", "tripflow-backfill"),
    ("en-situation", "tripflow", "I'm joining old trips with the stations table", "tripflow-stations"),
    ("en-situation", "quillpad", "going to pull the editor into the landing page", "quillpad-editor"),
    ("en-situation", "quillpad", "I'm setting up a new preview environment", "quillpad-authsecret"),
    ("en-situation", "beacon-fw", "I'm writing up what happened in yesterday's outage", "skill-incident"),
    # ---- en-symptom: a problem report (held out) --------------------------------------------
    ("en-symptom", "clinicbook", "patients in Lisbon get their reminder an hour off", "clinicbook-tz"),
    ("en-symptom", "clinicbook", "reminder email tests fail locally, the task never runs", "clinicbook-celery-tests"),
    ("en-symptom", "pgsnap", "restore fails with an unsupported version error on my colleague's machine", "pgsnap-doctor"),
    ("en-symptom", "pgsnap", "the released binary prints version dev", "pgsnap-dist"),
    ("en-symptom", "rowpack", "CI blocks my merge saying the version bump is too small", "rowpack-semver"),
    ("en-symptom", "rowpack", "fuzzing fails because the corpus directory is empty", "rowpack-fuzz"),
    ("en-symptom", "beacon-fw", "devices don't boot after the update", "beacon-ncs"),
    ("en-symptom", "beacon-fw", "flashing says success but the old firmware still runs", "beacon-flash"),
    ("en-symptom", "beacon-fw", "battery drains in a day on the prod units", "beacon-build"),
    ("en-symptom", "trailmate", "map is blank in the emulator", "trailmate-emulator"),
    ("en-symptom", "trailmate", "bundleRelease fails at signing", "trailmate-bundle"),
    ("en-symptom", "platform-gitops", "my rate limit annotation is ignored", "platform-gateway"),
    ("en-symptom", "tripflow", "the weekly rollup ran out of memory", "tripflow-polars"),
    ("en-symptom", "tripflow", "duplicate rides show up in trips_clean after new year", "tripflow-dedupe"),
    ("en-symptom", "quillpad", "the sidebar keeps showing old notes after I save", "quillpad-revalidate"),
    ("en-symptom", "quillpad", "sign in loops forever on the preview deployment", "quillpad-authsecret"),
    ("en-symptom", "quillpad", "CI build output looks stale", "quillpad-turbo"),
    # ---- en-permission: "can I / is it ok to ..." (held out) --------------------------------
    ("en-permission", "clinicbook", "can I push the hotfix straight to the prod app?", "clinicbook-promote"),
    ("en-permission", "pgsnap", "is it fine to register flags in init()?", "pgsnap-cobra"),
    ("en-permission", "rowpack", "can I return anyhow::Error from the public decode function?", "rowpack-errors"),
    ("en-permission", "beacon-fw", "is it ok to sleep for 10 ms in the connected callback?", "beacon-ksleep"),
    ("en-permission", "trailmate", "can I use Gson for this one small model?", "trailmate-serialization"),
    ("en-permission", "platform-gitops", "may I run terraform apply myself for a tiny change?", "platform-tfstate"),
    ("en-permission", "platform-gitops", "can I set deletion_protection to false to recreate the DB?", "platform-deletion"),
    ("en-permission", "tripflow", "is it ok to make the freshness check page on call as ERROR?", "tripflow-severity"),
    ("en-permission", "quillpad", "can I paste DATABASE_URL into the Vercel project settings?", "quillpad-neon"),
    ("en-permission", "quillpad", "ok to use a CSS module for this component?", "quillpad-tailwind"),
    ("en-permission", "pgsnap", "can I just git merge main into my feature branch?", "user-rebase"),
    # ---- zh ---------------------------------------------------------------------------------
    ("zh", "clinicbook", "本地跑的时候短信后端要怎么配置？", "clinicbook-sms"),
    ("zh", "rowpack", "提交前测试要跑哪些？", "rowpack-doctest"),
    ("zh", "beacon-fw", "SHT40 的地址是多少？", "beacon-sht40"),
    ("zh", "trailmate", "预览里能直接用真的 ViewModel 吗？", "trailmate-preview"),
    ("zh", "platform-gitops", "证书验证用哪种方式？", "platform-dns01"),
    ("zh", "tripflow", "旧数据的 station_id 怎么处理？", "tripflow-stations"),
    ("zh", "quillpad", "首页太慢了，编辑器怎么加载比较好？", "quillpad-editor"),
    ("zh", "pgsnap", "新的子命令应该放在哪里？", "pgsnap-cobra"),
    ("zh", "rowpack", "新仓库里的常用命令应该怎么组织？", "user-just"),
    # ---- es ---------------------------------------------------------------------------------
    ("es", "clinicbook", "¿cómo saco una versión a producción?", "clinicbook-promote"),
    ("es", "pgsnap", "¿dónde se guardan las instantáneas?", "pgsnap-store"),
    ("es", "rowpack", "¿cómo ejecuto el fuzzing?", "rowpack-fuzz"),
    ("es", "beacon-fw", "¿con qué clave se firman las imágenes OTA?", "beacon-ota-key"),
    ("es", "trailmate", "¿a qué pista subo el bundle en Play?", "trailmate-play"),
    ("es", "platform-gitops", "¿cuál es el bucket del estado de terraform?", "platform-tfstate"),
    ("es", "tripflow", "¿cómo regenero el fixture de DuckDB?", "tripflow-fixtures"),
    ("es", "quillpad", "¿los tests de Playwright van contra next dev?", "quillpad-e2e"),
    ("es", "trailmate", "¿qué arquitectura tiene mi portátil para construir imágenes docker?", "user-arch"),
    # ---- de (held out) ----------------------------------------------------------------------
    ("de", "clinicbook", "auf welchem Port läuft die lokale Postgres-Datenbank?", "clinicbook-localdb"),
    ("de", "pgsnap", "wie aktualisiere ich die Homebrew-Formel nach einem Release?", "pgsnap-brew"),
    ("de", "rowpack", "wie teste ich das Big-Endian-Verhalten?", "rowpack-endian"),
    ("de", "beacon-fw", "wie führe ich die Unit-Tests auf dem Host aus?", "beacon-tests"),
    ("de", "trailmate", "muss ich beim Room-Schema etwas beachten?", "trailmate-room"),
    ("de", "platform-gitops", "wann werden die Renovate-PRs für Helm gemergt?", "platform-renovate"),
    ("de", "tripflow", "wie wird die Produktion von tripflow deployt?", "tripflow-deploy"),
    ("de", "quillpad", "wie starte ich Migrationen in Produktion?", "quillpad-migrate"),
    ("de", "tripflow", "wie soll ich Änderungen vorschlagen, Erklärung zuerst?", "user-answers"),
    # ---- ja (held out) ----------------------------------------------------------------------
    ("ja", "clinicbook", "管理画面の URL はどこ？", "clinicbook-admin"),
    ("ja", "pgsnap", "設定ファイルはどこにある？", "pgsnap-config"),
    ("ja", "rowpack", "unsafe ブロックにはコメントが必要？", "rowpack-unsafe"),
    ("ja", "beacon-fw", "ROM の使用量はどうやって確認する？", "beacon-rom"),
    ("ja", "trailmate", "minSdk はいくつ？", "trailmate-minsdk"),
    ("ja", "platform-gitops", "本番クラスタの名前は？", "platform-clusters"),
    ("ja", "tripflow", "dagster をローカルで起動するポートは？", "tripflow-port"),
    ("ja", "quillpad", "Turborepo のキャッシュを無視してビルドするには？", "quillpad-turbo"),
    # ---- fr (held out) ----------------------------------------------------------------------
    ("fr", "clinicbook", "comment lancer les tests avec les bons réglages ?", "clinicbook-celery-tests"),
    ("fr", "pgsnap", "comment lancer les tests d'intégration ?", "pgsnap-integration"),
    ("fr", "rowpack", "comment publier une nouvelle version de la crate ?", "rowpack-publish"),
    ("fr", "beacon-fw", "quelle est l'adresse I2C du capteur SHT40 ?", "beacon-sht40"),
    ("fr", "trailmate", "comment envoyer un build sur le Play Store ?", "trailmate-play"),
    ("fr", "tripflow", "où atterrissent les fichiers bruts du fournisseur ?", "tripflow-buckets"),
    ("fr", "quillpad", "faut-il définir DATABASE_URL à la main sur Vercel ?", "quillpad-neon"),
    ("fr", "platform-gitops", "comment modifier un secret chiffré ?", "platform-sops"),
    # ---- unanswerable: generic coding asks (tune) -------------------------------------------
    ("none-generic-en", "clinicbook", "write a regex that matches an ISO date", None),
    ("none-generic-en", "pgsnap", "explain what this goroutine leak trace means", None),
    ("none-generic-en", "rowpack", "rename this variable to something clearer", None),
    ("none-generic-en", "beacon-fw", "what does volatile mean in C?", None),
    ("none-generic-en", "trailmate", "convert this Java class to Kotlin", None),
    ("none-generic-en", "platform-gitops", "what's the difference between a Deployment and a StatefulSet?", None),
    ("none-generic-en", "tripflow", "sort this list of dicts by the date key", None),
    ("none-generic-en", "quillpad", "why is useEffect running twice?", None),
    ("none-generic-en", "quillpad", "fix the typo in the footer text", None),
    ("none-generic-en", "clinicbook", "summarise the diff of my last commit", None),
    # ---- unanswerable: near misses in the same project (tune) --------------------------------
    ("none-nearmiss-en", "clinicbook", "how do I add a new field to the patient admin form?", None),
    ("none-nearmiss-en", "pgsnap", "how do I add shell completion for the CLI?", None),
    ("none-nearmiss-en", "rowpack", "how do I add a new column type to the decoder?", None),
    ("none-nearmiss-en", "beacon-fw", "how do I change the advertising interval?", None),
    ("none-nearmiss-en", "trailmate", "how do I add a new language to the app strings?", None),
    ("none-nearmiss-en", "platform-gitops", "how do I scale the frontend deployment to 5 replicas?", None),
    ("none-nearmiss-en", "tripflow", "how do I add a new column to the trips asset?", None),
    ("none-nearmiss-en", "quillpad", "how do I add dark mode to the notes page?", None),
    # ---- unanswerable: zh, es (tune) ---------------------------------------------------------
    ("none-zh", "clinicbook", "帮我把这个函数改成异步的", None),
    ("none-zh", "rowpack", "这段代码的时间复杂度是多少？", None),
    ("none-zh", "trailmate", "怎么给这个按钮加一个点击动画？", None),
    ("none-zh", "tripflow", "帮我写一个计算平均值的 SQL", None),
    ("none-es", "pgsnap", "¿qué significa este error de compilación?", None),
    ("none-es", "beacon-fw", "explícame qué hace esta función", None),
    ("none-es", "platform-gitops", "¿cómo escribo un bucle for en bash?", None),
    ("none-es", "quillpad", "añade un botón para compartir la nota", None),
    # ---- unanswerable: held out ---------------------------------------------------------------
    ("none-otherproject", "clinicbook", "how do I flash the firmware?", None),
    ("none-otherproject", "pgsnap", "which Play track do uploads go to?", None),
    ("none-otherproject", "rowpack", "what port does the dagster UI use?", None),
    ("none-otherproject", "beacon-fw", "how do Vercel preview databases work?", None),
    ("none-otherproject", "trailmate", "where is the terraform state bucket?", None),
    ("none-otherproject", "tripflow", "what's the minSdk of the app?", None),
    ("none-otherproject", "quillpad", "how do I publish the crate?", None),
    ("none-otherproject", "platform-gitops", "where's the Django admin mounted?", None),
    ("none-nearmiss-other", "clinicbook", "the appointment list page is slow, how can I profile it?", None),
    ("none-nearmiss-other", "rowpack", "can you explain the row header layout?", None),
    ("none-nearmiss-other", "trailmate", "the app crashes when rotating on the settings screen", None),
    ("none-nearmiss-other", "quillpad", "the note title input loses focus while typing", None),
    ("none-de", "pgsnap", "erkläre mir diesen Stacktrace", None),
    ("none-de", "trailmate", "schreib mir eine Funktion, die Kilometer in Meilen umrechnet", None),
    ("none-de", "tripflow", "wie kann ich diese Schleife schneller machen?", None),
    ("none-de", "quillpad", "füge einen Ladeindikator zur Notizliste hinzu", None),
    ("none-ja", "clinicbook", "この関数の名前をもっと分かりやすくして", None),
    ("none-ja", "rowpack", "このコードをリファクタリングして", None),
    ("none-ja", "beacon-fw", "このエラーメッセージの意味は？", None),
    ("none-ja", "platform-gitops", "YAML のインデントを直して", None),
    ("none-fr", "pgsnap", "peux-tu ajouter des commentaires à cette fonction ?", None),
    ("none-fr", "tripflow", "écris un test pour cette fonction", None),
    ("none-fr", "quillpad", "pourquoi ce composant se re-rend-il trop souvent ?", None),
    ("none-fr", "beacon-fw", "explique-moi ce que fait ce makefile", None),
]

# Families tuning may look at; every other family is held out and measured once at the end.
TUNE_FAMILIES = ("en-howto", "en-task", "en-terse", "zh", "es", "none-generic-en", "none-nearmiss-en", "none-zh", "none-es")


def main() -> None:
    here = Path(__file__).resolve().parent
    questions = [
        {
            "id": f"f-{number:03d}", "family": family, "language": family.split("-")[-1] if family in ("zh", "es", "de", "ja", "fr") or family.startswith("none-") and family.split("-")[-1] in ("zh", "es", "de", "ja", "fr") else "en",
            "kind": "none" if expect is None else "paraphrase", "cwd_project": project, "question": question, "expect": expect,
            "split": "tune" if family in TUNE_FAMILIES else "test",
        }
        for number, (family, project, question, expect) in enumerate(Q, start=1)
    ]
    (here / "questions.json").write_text(json.dumps({"about": __doc__.split("\n")[0], "tune_families": TUNE_FAMILIES, "questions": questions}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(questions)} questions, {sum(q['split'] == 'tune' for q in questions)} tune")


if __name__ == "__main__":
    main()
