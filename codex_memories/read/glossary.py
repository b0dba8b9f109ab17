"""English glosses for a question asked in another language, so recall can match a memory kept in
English (issue 34: recall must hold in the user's language, and the encoder and most memories
are English).

Contract:
- `english_gloss(query)` returns the English words of the coding concepts the query names, in
  the order found, without repeats ("" when it names none or is English already). Recall adds
  them to the query's search terms and to the text it encodes; the query itself is kept, so a
  memory written in the user's language still matches it word for word.
- The lexicon is general software vocabulary (building, testing, releasing, configuring,
  storing, permissions, ...), one row per concept, with the forms people type in Spanish,
  Portuguese, French, German, Russian, Chinese, Japanese and Korean. Latin and Cyrillic forms
  are word prefixes (a stem matches its inflections: "desplieg" matches "despliegue" and
  "desplegar" would need its own stem); CJK forms are substrings (no spaces to split on).
  It was written from the vocabulary, not from questions; `benchmarks/recall_families.py`
  reports recall on question families and languages it was not tuned on.
- Pure and standard library only: the prompt hook runs it every turn.
"""

from __future__ import annotations

import re
from functools import lru_cache

# (English gloss, forms). A Latin/Cyrillic form is a lower-case word prefix of at least four
# letters (shorter ones must match the whole word); a CJK form matches anywhere.
CONCEPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("deploy", ("despleg", "desplieg", "implant", "déploi", "deploy", "bereitstell", "ausroll", "deploy", "разверт", "развёрт", "деплой", "部署", "发布到", "デプロイ", "배포")),
    ("release", ("lanzamiento", "versión nueva", "publicación", "lançament", "versão", "release", "veröffentlich", "freigabe", "релиз", "выпуск", "发版", "发布", "上线", "リリース", "릴리스", "릴리즈")),
    ("publish", ("publicar", "publique", "publier", "publie", "veröffentlich", "publizier", "опубликова", "публика", "发布", "公開", "게시", "배포")),
    ("production prod", ("producción", "produção", "produção", "producao", "production", "produktion", "produktiv", "продакшен", "прод", "боев", "生产", "线上", "正式环境", "本番", "프로덕션", "운영")),
    ("staging", ("preproducción", "pruebas previas", "homologação", "préproduction", "préprod", "staging", "staging", "стейджинг", "预发", "测试环境", "ステージング", "스테이징")),
    ("test tests testing", ("prueba", "test", "teste", "testar", "test", "essai", "testen", "tests", "prüf", "тест", "测试", "单测", "テスト", "테스트")),
    ("unit test", ("unitari", "unitário", "unitaire", "unit-test", "unittest", "модульн", "单元测试", "ユニットテスト", "단위 테스트")),
    ("integration test", ("integración", "integração", "intégration", "integration", "интеграцион", "集成测试", "統合テスト", "結合テスト", "통합 테스트")),
    ("build", ("compilar", "construir", "compila", "build", "compiler", "construire", "bauen", "build", "kompilier", "сборк", "собрат", "собира", "构建", "编译", "打包", "ビルド", "빌드")),
    ("run start", ("ejecut", "arranc", "lanzar", "executar", "rodar", "iniciar", "exécut", "lancer", "démarr", "ausführ", "starten", "laufen", "запуст", "выполн", "运行", "启动", "跑", "実行", "起動", "動か", "실행", "시작")),
    ("install", ("instal", "instal", "install", "installier", "установ", "安装", "インストール", "설치")),
    ("configuration config settings", ("configura", "ajuste", "configuração", "configuration", "réglage", "paramètr", "konfigur", "einstellung", "настро", "конфиг", "配置", "设置", "設定", "構成", "설정", "구성")),
    ("file", ("archivo", "fichero", "arquivo", "fichier", "datei", "файл", "文件", "ファイル", "파일")),
    ("folder directory path", ("carpeta", "directorio", "ruta", "pasta", "diretório", "caminho", "dossier", "répertoire", "chemin", "ordner", "verzeichnis", "pfad", "папк", "каталог", "путь", "目录", "路径", "文件夹", "フォルダ", "ディレクトリ", "パス", "폴더", "디렉터리", "경로")),
    ("where location", ("dónde", "donde", "onde", "où", "wo ", "wohin", "где", "куда", "哪里", "哪儿", "在哪", "どこ", "어디")),
    ("port", ("puerto", "porta", "port", "порт", "端口", "ポート", "포트")),
    ("version", ("versión", "versão", "version", "версия", "версии", "版本", "バージョン", "버전")),
    ("database db", ("base de datos", "banco de dados", "base de données", "datenbank", "база данных", "базу данных", "бд", "数据库", "データベース", "데이터베이스")),
    ("migration migrations", ("migraci", "migraç", "migration", "миграц", "迁移", "マイグレーション", "移行", "마이그레이션")),
    ("secret password credentials", ("secreto", "contraseña", "credencial", "segredo", "senha", "secret", "mot de passe", "identifiant", "geheimnis", "passwort", "zugangsdaten", "секрет", "парол", "密钥", "密码", "凭据", "シークレット", "パスワード", "비밀", "비밀번호")),
    ("key signing sign", ("clave", "firma", "firmar", "chave", "assinatura", "assinar", "clé", "signature", "signer", "schlüssel", "signier", "ключ", "подпис", "密钥", "签名", "鍵", "キー", "署名", "키", "서명")),
    ("encrypted encryption", ("cifrad", "encriptad", "criptograf", "chiffr", "verschlüssel", "зашифров", "шифров", "加密", "暗号", "암호화")),
    ("certificate tls", ("certificado", "certificat", "zertifikat", "сертификат", "证书", "証明書", "인증서")),
    ("permission allowed may", ("permiso", "puedo", "permitido", "permissão", "posso", "permission", "puis-je", "autorisé", "berechtigung", "darf ich", "erlaubt", "разреш", "можно", "权限", "可以", "能不能", "許可", "いい？", "권한", "해도")),
    ("branch", ("rama", "ramo", "branch", "branche", "zweig", "ветк", "分支", "ブランチ", "브랜치")),
    ("merge", ("fusionar", "mezclar", "mesclar", "fusionner", "mergen", "zusammenführ", "слить", "слия", "мерж", "合并", "マージ", "병합")),
    ("commit", ("commit", "confirmación", "комми", "提交", "コミット", "커밋")),
    ("review pull request", ("revisión", "revisão", "revue", "relecture", "überprüf", "review", "ревью", "评审", "审查", "レビュー", "리뷰")),
    ("dependency package", ("dependencia", "paquete", "dependência", "pacote", "dépendance", "paquet", "abhängigkeit", "paket", "зависимост", "пакет", "依赖", "包", "依存", "パッケージ", "의존성", "패키지")),
    ("cache", ("caché", "cache", "кэш", "кеш", "缓存", "キャッシュ", "캐시")),
    ("log logs logging", ("registro", "bitácora", "log", "journal", "protokoll", "лог", "журнал", "日志", "ログ", "로그")),
    ("error fails failure", ("error", "falla", "fallo", "erro", "falha", "erreur", "échec", "échoue", "fehler", "schlägt fehl", "ошибк", "падает", "报错", "错误", "失败", "エラー", "失敗", "오류", "에러", "실패")),
    ("slow performance", ("lento", "rendimiento", "desempenho", "lent", "performance", "langsam", "leistung", "медлен", "производительн", "慢", "性能", "遅い", "パフォーマンス", "느리", "성능")),
    ("memory out of memory", ("memoria", "memória", "mémoire", "speicher", "памят", "内存", "メモリ", "메모리")),
    ("environment variable env", ("variable de entorno", "entorno", "variável de ambiente", "ambiente", "variable d'environnement", "environnement", "umgebungsvariable", "umgebung", "переменн", "окружени", "环境变量", "环境", "環境変数", "環境", "환경 변수", "환경")),
    ("local locally", ("local", "localmente", "lokal", "локальн", "本地", "ローカル", "로컬")),
    ("server", ("servidor", "serveur", "server", "сервер", "服务器", "サーバ", "서버")),
    ("cluster", ("clúster", "cluster", "кластер", "集群", "クラスタ", "클러스터")),
    ("bucket storage", ("bucket", "almacenamiento", "armazenamento", "stockage", "speicherort", "хранилищ", "бакет", "存储", "桶", "ストレージ", "バケット", "스토리지", "버킷")),
    ("upload", ("subir", "subo", "carregar", "enviar", "téléverser", "envoyer", "hochladen", "загруз", "上传", "アップロード", "업로드")),
    ("download", ("descargar", "baixar", "télécharger", "herunterladen", "скача", "下载", "ダウンロード", "다운로드")),
    ("update upgrade bump", ("actualiz", "atualiz", "mettre à jour", "mise à jour", "aktualisier", "update", "обнов", "更新", "升级", "アップデート", "更新", "업데이트")),
    ("delete remove", ("borrar", "eliminar", "apagar", "remover", "supprimer", "effacer", "löschen", "entfern", "удал", "删除", "削除", "삭제")),
    ("rename", ("renombrar", "renomear", "renommer", "umbenenn", "переименова", "重命名", "名前を変更", "이름 변경")),
    ("format style", ("formato", "estilo", "format", "style", "formatier", "stil", "формат", "стил", "格式", "样式", "フォーマット", "スタイル", "형식", "스타일")),
    ("schema", ("esquema", "schéma", "schema", "схем", "架构", "模式", "スキーマ", "스키마")),
    ("table", ("tabla", "tabela", "table", "tabelle", "таблиц", "表", "テーブル", "테이블")),
    ("query sql", ("consulta", "requête", "abfrage", "запрос", "查询", "クエリ", "쿼리")),
    ("timezone time zone utc", ("zona horaria", "fuso horário", "fuseau horaire", "zeitzone", "часов пояс", "часового пояса", "时区", "タイムゾーン", "시간대")),
    ("screenshot image", ("captura", "imagen", "imagem", "capture d'écran", "image", "bildschirmfoto", "screenshot", "bild", "скриншот", "изображени", "截图", "图片", "镜像", "スクリーンショット", "画像", "イメージ", "스크린샷", "이미지")),
    ("container docker image", ("contenedor", "contêiner", "conteneur", "container", "контейнер", "容器", "コンテナ", "컨테이너")),
    ("architecture", ("arquitectura", "arquitetura", "architecture", "architektur", "архитектур", "架构", "アーキテクチャ", "아키텍처")),
    ("laptop machine", ("portátil", "máquina", "notebook", "ordinateur portable", "machine", "laptop", "rechner", "ноутбук", "машин", "笔记本", "電脳", "ノートパソコン", "노트북")),
    ("command commands", ("comando", "commande", "befehl", "kommando", "команд", "命令", "コマンド", "명령")),
    ("subcommand", ("subcomando", "sous-commande", "unterbefehl", "подкоманд", "子命令", "サブコマンド", "하위 명령")),
    ("flag option", ("opción", "bandera", "opção", "option", "drapeau", "flag", "опци", "флаг", "参数", "选项", "オプション", "フラグ", "옵션", "플래그")),
    ("comment", ("comentario", "comentário", "commentaire", "kommentar", "комментар", "注释", "评论", "コメント", "주석")),
    ("todo", ("pendiente", "pendência", "à faire", "待办", "やること", "할 일")),
    ("change changes", ("cambio", "mudança", "alteração", "changement", "modification", "änderung", "изменени", "变更", "修改", "改动", "変更", "변경")),
    ("explain explanation", ("explica", "explicação", "explication", "erklär", "объясн", "解释", "説明", "설명")),
    ("address", ("dirección", "endereço", "adresse", "адрес", "地址", "アドレス", "주소")),
    ("sensor", ("sensor", "capteur", "датчик", "传感器", "センサ", "센서")),
    ("board device hardware", ("placa", "dispositivo", "carte", "appareil", "platine", "gerät", "плат", "устройств", "板子", "开发板", "设备", "ボード", "デバイス", "보드", "장치")),
    ("firmware flash", ("firmware", "flashear", "grabar", "flasher", "прошивк", "прошить", "固件", "烧录", "ファームウェア", "書き込", "펌웨어")),
    ("battery", ("batería", "bateria", "batterie", "akku", "батаре", "电池", "バッテリ", "전지", "배터리")),
    ("state", ("estado", "état", "zustand", "состояни", "状态", "ステート", "状態", "상태")),
    ("backup snapshot", ("copia de seguridad", "instantánea", "cópia de segurança", "instantâneo", "sauvegarde", "instantané", "sicherung", "snapshot", "резервн", "снимок", "снапшот", "备份", "快照", "バックアップ", "スナップショット", "백업", "스냅샷")),
    ("fixture sample data", ("datos de prueba", "dados de teste", "données de test", "testdaten", "фикстур", "тестовые данные", "测试数据", "テストデータ", "테스트 데이터")),
    ("regenerate generate", ("regener", "gener", "régénér", "génér", "erzeug", "generier", "сгенерир", "генерир", "生成", "重新生成", "再生成", "생성")),
    ("track channel", ("pista", "canal", "faixa", "piste", "spur", "трек", "канал", "轨道", "渠道", "トラック", "チャネル", "트랙")),
    ("store app store play", ("tienda", "loja", "boutique", "magasin", "store", "магазин", "应用商店", "ストア", "스토어")),
    ("admin administration", ("administración", "administração", "administration", "verwaltung", "админ", "管理", "管理画面", "관리")),
    ("url link", ("enlace", "link", "lien", "ссылк", "链接", "网址", "リンク", "링크")),
    ("name", ("nombre", "nome", "nom", "name", "имя", "назван", "名称", "名字", "名前", "이름")),
    ("how", ("cómo", "como", "comment", "wie", "как", "怎么", "如何", "どうやって", "どう", "어떻게")),
    ("usage rom size", ("uso", "tamaño", "tamanho", "taille", "utilisation", "größe", "nutzung", "размер", "использовани", "使用量", "大小", "サイズ", "使用量", "크기", "사용량")),
    ("behaviour endian byte order", ("comportamiento", "comportamento", "comportement", "verhalten", "поведени", "字节序", "バイトオーダ", "엔디언")),
    ("ignore skip without", ("ignorar", "saltar", "sin ", "ignorer", "sauter", "sans ", "ignorier", "überspring", "ohne ", "игнорир", "пропуст", "без ", "忽略", "跳过", "無視", "スキップ", "무시", "건너뛰")),
    ("raw", ("crudo", "bruto", "brut", "roh", "сыр", "原始", "生データ", "원시")),
    ("vendor supplier", ("proveedor", "fornecedor", "fournisseur", "anbieter", "lieferant", "поставщик", "供应商", "ベンダー", "業者", "공급업체")),
    ("manual by hand", ("a mano", "manual", "à la main", "manuel", "von hand", "manuell", "вручную", "手动", "手工", "手動", "수동")),
)

_WORD = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_MIN_PREFIX = 4


@lru_cache(maxsize=1)
def _forms() -> tuple[tuple[tuple[str, str], ...], tuple[tuple[re.Pattern[str], str], ...], tuple[tuple[str, str], ...], frozenset[str]]:
    """(CJK substrings, phrases as whole-word patterns, word prefixes, whole words), with glosses.

    A form written with a trailing space ("wo ", "sin ") is a whole word only: as a prefix or a
    substring it would match inside other words ("two", "using")."""
    cjk: list[tuple[str, str]] = []
    phrases: list[tuple[re.Pattern[str], str]] = []
    prefixes: list[tuple[str, str]] = []
    whole: dict[str, str] = {}
    for gloss, forms in CONCEPTS:
        for form in forms:
            if _CJK.search(form):
                cjk.append((form, gloss))
            elif " " in form.strip() or "'" in form:
                phrases.append((re.compile(rf"(?<!\w){re.escape(form.strip())}(?!\w)"), gloss))
            elif form != form.rstrip() or len(form) < _MIN_PREFIX:
                whole[form.strip()] = gloss
            else:
                prefixes.append((form, gloss))
    return tuple(cjk), tuple(phrases), tuple(prefixes), frozenset(whole.items())


def english_gloss(query: str) -> str:
    """The English words of the coding concepts `query` names in another language ("" for none)."""
    lowered = query.lower()
    cjk, phrases, prefixes, whole = _forms()
    found: list[str] = []
    if _CJK.search(lowered):
        found += [gloss for form, gloss in cjk if form in lowered]
    words = _WORD.findall(lowered)
    if not _looks_english(words):
        found += [gloss for pattern, gloss in phrases if pattern.search(lowered)]
        whole_words = dict(whole)
        for word in words:
            if word in whole_words:
                found.append(whole_words[word])
            found += [gloss for form, gloss in prefixes if word.startswith(form)]
    english = list(dict.fromkeys(word for gloss in found for word in gloss.split()))
    return " ".join(english)


# English function words: a query made of them is English and needs no gloss (its own words
# already match, and a gloss would only add noise such as "test" for "test").
# Only words no other supported language writes the same way ("a", "in", "on", "do", "was" are
# Spanish, German, French or Portuguese words too).
_ENGLISH = frozenset(
    "the is are of for with and how does we you this that what where which when can should my our there here it's i'm".split()
)


def _looks_english(words: list[str]) -> bool:
    if not words:
        return True
    return sum(word in _ENGLISH for word in words) / len(words) >= 0.2
