"""Small per-language lexicons for judging what a user said: one table per language.

Contract:
- `language_of(text)` -> one of `LANGUAGES`: the script decides for Korean (Hangul), Japanese
  (any Hiragana or Katakana: Japanese is never read with the Chinese table), Chinese (Han without
  kana) and Russian (Cyrillic); Latin-script text is English, Spanish, Portuguese, French or
  German by its function words and letters, English when nothing else scores.
- `LEXICONS[language]` is a `Lexicon`: one compiled pattern per role a word or phrase plays in
  a user's turn (see the field comments). The tables are small on purpose: they name the common
  grammatical markers of each role (question particles, modal verbs, time adverbs, first-person
  plural, lead-ins), not the topics a user talks about, so a statement about anything passes
  through the same few markers. `extract.rules` decides from them; nothing here decides.
- `VALUE` is language-neutral: a token that names a concrete value (a port, a version, a path,
  a host, a kebab- or snake-case name, something in backticks).

Pure: compiled regular expressions, no I/O.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LANGUAGES = ("en", "zh", "ja", "ko", "es", "pt", "fr", "de", "ru")

_FLAGS = re.IGNORECASE


@dataclass(frozen=True)
class Lexicon:
    language: str
    question: re.Pattern[str]  # asks something: question words, particles, "I wonder"
    chatter: re.Pattern[str]  # the whole turn is thanks, an acknowledgement, a greeting or a hedge
    request: re.Pattern[str]  # asks for the change at hand: an action verb leading, "can you", "let's"
    at_hand: re.Pattern[str]  # points at the change at hand: "this function", "this change"
    one_off: re.Pattern[str]  # "this time", "only for this commit", "just today": never a standing rule
    temporary: re.Pattern[str]  # "for now", "this week", "until ...", "not yet": time-boxed
    durable: re.Pattern[str]  # "always", "never", "from now on", "by default", "in this repo"
    normative: re.Pattern[str]  # "must", "should", "don't", "not allowed", "use X, not Y"
    decision: re.Pattern[str]  # "we decided", "we're going with", "we settled on"
    preference: re.Pattern[str]  # "I prefer", "I like", "for me", "my preference"
    team: re.Pattern[str]  # first person plural and "here": a practice of the place
    lead_in: re.Pattern[str]  # "Note:", "FYI", "Decision:", "Convention:" at the start
    fact: re.Pattern[str]  # environment nouns and verbs: port, profile, version, "runs on", "is"
    convention: re.Pattern[str]  # where and how things are: "live in", "are named", "go in", "each"
    narration: re.Pattern[str]  # past events: "yesterday", "last time", "had to", "tried"
    status: re.Pattern[str]  # the state of the moment: "fails", "broken", "error", "timeout"
    correction: re.Pattern[str]  # "actually", "I meant", "not X but Y", "changed my mind": replaces what was said
    # The project moved to a new standing state ("we moved the workspace to node 20", "auf Postgres
    # 16 umgestiegen", 升级到): past in form, a fact from now on. `extract.rules` also wants a value.
    state_change: re.Pattern[str]
    retraction: re.Pattern[str]  # "no more X", "X 不要了", "statt X": names what is dropped
    also: re.Pattern[str]  # "also", 另外, あと, außerdem: adds to what was said before
    # The marks of an instruction given without a verb ("pnpm over npm", "small diffs, one change
    # per PR", "respuestas cortas, sin resumen"): a choice against another, a thing ruled out, a
    # restriction, a share per unit. `extract.rules` wants them in a short turn of fragments.
    terse: re.Pattern[str]
    reason: re.Pattern[str] | None = None  # "because ..." (group 1 is the reason)


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


# A concrete value: `code`, a number of two or more digits, a dotted version, a path, a host with
# a domain or port, a kebab- or snake-case name (acme-sandbox, eu-west-1, products_live).
VALUE = re.compile(
    r"`[^`]+`|(?<![A-Za-z0-9_.])\d{2,}(?![0-9]|\.\d)|(?<![A-Za-z0-9_.])\d+(?:\.\d+)+(?![0-9]|\.\d)|[\w.~-]*/[\w./<>-]+"
    r"|\b[\w-]+(?:\.[a-z][\w-]*)+(?::\d+)?\b"
    r"|\b[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+\b"
)

ENGLISH = Lexicon(
    language="en",
    question=_p(
        r"^(?:why|what|how|when|where|which|who|whose|can|could|would|should|shall|is|are|does|did|will|have|has|am|was|were"
        r"|isn't|aren't|doesn't|don't we|any idea)\b|^do\b(?!\s+not\b)|\bI wonder\b|\bwondering\b"
    ),
    chatter=_p(
        r"^(?:thanks|thank you|thx|ty|ok(?:ay)?|cool|nice|great|perfect|awesome|lgtm|looks good|sounds good|got it|makes sense"
        r"|good (?:morning|night|evening|afternoon)|hi|hello|hey|yes|yep|yeah|sure|no worries|never mind|nvm|done|works"
        r"|I think|I guess|I suspect|I believe|maybe|perhaps|probably|it seems|seems like|looks like|not sure)\b"
    ),
    request=_p(
        r"^(?:please\s+)?(?:fix|add|implement|refactor|rename|update|change|write|create|remove|delete|move|debug|investigate"
        r"|look\s+(?:at|into)|check|try|show|explain|make|run|build|bump|revert|rewrite|clean\s+up|split|merge|extract"
        r"|document|generate|set\s+up|install|help|find|search|open|review)\b"
        r"|^(?:can|could|would|will)\s+you\b|^let'?s\b|^I\s+(?:need|want|'d like)\s+you\s+to\b|^go ahead\b"
    ),
    at_hand=_p(
        r"\b(?:this|that|these|those)\s+(?:(?:one|flaky|failing|broken|new|old|same|last|first)\s+)?(?:function|method|class|file|module|test|bug|error|issue|PR|pull request|change|diff"
        r"|line|query|endpoint|component|script|snippet|variable|loop|client|case|one)s?\b|\bthe failing\b|\b(?:just\s+)?to see (?:if|whether)\b|\bto try (?:it|something)\b|\bas an experiment\b"
        r"|^(?:starting|working|moving|continuing|back) on\b"
    ),
    one_off=_p(
        r"\b(?:this time|this once|just once|one[- ]off|as an exception|this one time"
        r"|(?<!not )(?:only|just)\s+(?:for\s+)?(?:this|the current)\s+(?:commit|PR|pull request|change|run|release|deploy(?:ment)?|ticket|task|build|session|one)"
        r"|for\s+this\s+(?:commit|PR|pull request|change|run|release|deploy(?:ment)?|ticket|task|build|session)\s+only"
        r"|(?<!not )(?:just|only)\s+(?:for\s+)?today|today only|for today)\b"
    ),
    temporary=_p(
        r"\b(?:for now|temporarily|for the time being|for the moment|until\b|till\b|while (?:we|i|the)\b|hold off|this week|not yet|yet$"
        r"|yet[.!]?$|today|tonight|tomorrow)"
    ),
    durable=_p(
        r"\b(?:always|never|from now on|going forward|from here on|by default|in this (?:repo|repository|project|codebase|code base|team|service)"
        r"|everywhere|every time|whenever|as a rule|for good|permanently|across the board|anymore|any more|no longer"
        r"|(?:don'?t|do not|never) ever|ever again|(?:only )?when I (?:ask|say so|tell you)|(?:before|after|on|for|with) (?:every|each)"
        r"|(?:before|after|when) \w+ing any)\b|,\s*ever\b"
    ),
    normative=_p(
        r"\b(?:must|mustn't|have to|has to|should|shouldn't|ought to|avoid|not allowed|forbidden|prohibited"
        r"|is required|are required|required to|mandatory|make sure|be sure|ensure|instead of|rather than)\b"
        r"|^(?:please\s+)?(?:only\s+)?(?:use|prefer|stick to|stick with)\b|\buse\b[^.]*,\s*not\b"
        r"|(?:^|,\s*)(?:(?:just|please|and|but|so|also|then)\s+)*(?:don'?t|do not)\b"
    ),
    decision=_p(
        r"\b(?:we|I|the team)\s*(?:have\s+|'ve\s+|had\s+)?(?:decided|agreed|chose|chosen|picked|settled on|went with|are going with"
        r"|'re going with|will go with|'ll go with|go with|are sticking with|'re sticking with|will stick with|'ll stick with"
        r"|stick with|are keeping|'re keeping|keep|standardi[sz]ed on|switched to|moved to|migrated to|are using|'re using)\b"
        r"|\bdecision\b|\bfinal call\b"
    ),
    preference=_p(
        r"\bI\s+(?:prefer|like|love|'d rather|would rather|'d prefer|would prefer|hate|dislike|can't stand|find)\b"
        r"|\bmy\s+(?:preference|taste|style)\b|\bworks? best for me\b|\bfor me\b"
    ),
    team=_p(
        r"^(?:we|our)\b(?!\s+(?:need|could|can|might|may)\b)|\bwe\s+(?:always\s+|usually\s+|normally\s+|only\s+)?(?:use|run|deploy"
        r"|keep|write|put|name|store|ship|release|build|test|follow|squash|merge|prefer|tag|pin|host|call)\b"
    ),
    lead_in=_p(
        r"^(?:note|nb|n\.b\.|fyi|heads[- ]up|psa|decision|convention|rule|policy|reminder|important|for the record"
        r"|just so you know|for your information|tip|context|gotcha|caveat)\b\s*[:,\-—]?\s*"
    ),
    fact=_p(
        r"\b(?:port|profile|version|path|dir(?:ectory)?|folder|host(?:name)?|url|endpoint|database|db|region|cluster|bucket"
        r"|registry|alias|index|namespace|account|env(?:ironment)? var(?:iable)?s?|runs? (?:on|in|at)|listens? on"
        r"|lives? (?:in|at|on)|is (?:at|in|on)|are (?:at|in|on)|points? to|pinned|located|stored in|served from|deployed to)\b"
    ),
    convention=_p(
        r"\b(?:live|lives|sit|sits|go (?:in|into|under|through)|goes (?:in|into|under|through)|belong|belongs"
        r"|are (?:(?-i:[a-z]+ed)|read|written|kept|built|run|made|set|done)"
        r"|follow|follows|start with|starts with|end with|ends with|has its own|have their own)\b|^(?:each|every)\b"
    ),
    narration=_p(
        r"\b(?:used to|had to|had|was|were|did|didn't|yesterday|last (?:week|month|year|time)|ago|tried|said|told)\b"
        r"|\b(?:I|we|he|she|they|someone|somebody)\s+(?:always\s+|never\s+)?\w+ed\b"
    ),
    status=_p(
        r"\b(?:fails?|failing|failed|broken|breaks|crash(?:es|ed)?|errors?|exception|time[sd]? out|timeout|hangs?|flaky|slow"
        r"|doesn'?t work|does not work|not working|bug|bugs|wrong|green|red|passing|all clear|won'?t (?:start|run|build|load|compile|open|work|boot|connect))\b"
    ),
    correction=_p(r"^(?:actually|correction|sorry|wait|scratch that|I meant|I mean|oops|my bad|no wait|update|rather|on second thought|second thoughts"
        r"|(?:I|I've|I have)\s+changed my mind|change of plans?|never mind that|forget (?:that|what I said))\b|\bnot\s+\S+\s*,\s*but\b"),
    state_change=_p(
        r"\b(?:moved|switched|migrated|upgraded|updated|bumped|changed|ported|transitioned|swapped|standardi[sz]ed|converted|went"
        r"|downgraded|rolled (?:over|forward))\b.{0,60}?\b(?:to|onto|over to)\b(?!\s+(?:see|try|check|test|make|fix|get|avoid)\b)"
        r"|\b(?:is|are|lives?|runs?)\s+now\b|\bnow\s+(?:on|uses?|runs?|lives?|is|are)\b"
    ),
    also=_p(r"^(?:and\s+)?(?:also|additionally|plus|on top of that|as well)\b|\b(?:as well|too)[.!]?$"),
    retraction=_p(r"\b(?:no more|not any ?more|no longer|drop|dropped|ditch|scrap|forget|is out|are out|instead of|rather than|replaced?|replaces)\b"),
    terse=_p(r"\b(?:over|instead of|not|no|without|only|per|each)\b|\s>\s"),
)

CHINESE = Lexicon(
    language="zh",
    question=_p(r"^(?:为什么|为啥|怎么|能不能|可不可以|是不是|要不要|是否|哪|什么|谁|几)|是不是|有没有|能不能|要不要|可不可以|对不对|是否|吗[。！.!]?$|呢[。.]?$|^不知道"),
    chatter=_p(r"^(?:谢谢|多谢|感谢|好的|好吧|行|可以了|没问题|收到|明白|了解|早上好|你好|嗨|晚安|辛苦了|不错|完美|太好了|我觉得|我猜|可能|也许|好像|似乎|感觉)"),
    request=_p(r"^(?:请)?(?:帮我|帮忙|麻烦你?|给我|把|修一下|修复|加上|加个|添加|实现|重构|改一下|修改|重命名|写一个|写个|删掉|删除|看看|看一下|检查|跑一下|运行|调试|查一下|解释|你能|你可以)|(?:我们|咱们)把.*吧|吧[。！!]?$"),
    at_hand=_p(r"这个(?:函数|方法|类|文件|模块|测试|bug|错误|问题|PR|改动|提交|脚本|变量|客户端)|这次改动|刚才|试试|试一下|看看效果"),
    one_off=_p(r"这次|这一次|本次|就这一次|只这一次|仅此一次|只有这次|今天先|就今天|只今天|仅今天|只限今天|这个提交|这次提交|例外"),
    temporary=_p(r"暂时|目前先|直到|先别|先不要|还不|暂且|这周|本周|这个星期|本月|这个月|今天|今晚|明天|之前先|在.{1,12}之前"),
    durable=_p(r"总是|一直|始终|永远|以后|今后|从现在开始|往后|默认|一律|统一|每次|长期|彻底|在这个(?:仓库|项目|代码库)|本仓库|本项目|这个(?:仓库|项目)"),
    normative=_p(r"禁止|必须|务必|一定要|不准|不许|请勿|严禁|不要|别|不能|不允许|不可以|应该|应当|需要|而不是|不用|要用|得用"),
    decision=_p(r"决定|定了|定为|选了|选用|采用|就用|商定|约定|同意|拍板|敲定|改用|换成|用.{0,20}了[。]?$"),
    preference=_p(r"我(?:更)?喜欢|我偏好|我倾向|我习惯|我希望|对我来说|我的习惯|更好|比较好"),
    team=_p(r"^(?:我们|咱们|团队)|我们(?:用|使用|都|一般|通常)"),
    lead_in=_p(r"^(?:注意|备注|说明|提示|决定|约定|规则|规定|原则|提醒|重要|记住|记一下|顺便说一下|顺便|仅供参考|供参考|补充)\s*[：:，,]?\s*"),
    fact=_p(r"端口|配置|profile|版本|路径|目录|地址|主机|数据库|区域|集群|桶|别名|索引|环境变量|跑在|运行在|跑的是|监听|位于|是"),
    convention=_p(r"放在|位于|命名为|叫做|以.{1,10}开头|遵循|遵守|存储|读取|写入|都有|每个|各个"),
    narration=_p(r"昨天|上周|上个月|以前我|之前我|去年|用过|说过|当时|那次|不得不|上次"),
    status=_p(r"失败|报错|出错|挂了|坏了|绿了|变绿|通过了|不工作|超时|崩溃|卡住|有问题|bug"),
    correction=_p(r"^(?:其实|不对|更正|纠正|抱歉|等等|等一下|等下|说错了|我是说|应该是|改主意|算了|还是改)|改主意了|不是.{1,20}而是"),
    state_change=_p(
        r"升级到|升到|迁移到|迁到|切换到|切到|换成|换到|改成|改为|改到|搬到|挪到|移到|转到|更新到|升级为|迁移至|现在(?:用|是|在|跑)"
    ),
    also=_p(r"^(?:另外|还有|此外|并且|而且)|也要|也得|也请"),
    retraction=_p(r"不要了|不用了|不再|弃用|废弃|去掉|换掉|代替|取代|而不是|已经删|删掉了"),
    terse=_p(r"而不是|不要|不用|别用|只用|只要|只|每个|每次一个|一个.{1,8}一个|优先"),
    reason=re.compile(r"(?:因为|由于)(.+)$"),
)

JAPANESE = Lexicon(
    language="ja",
    question=_p(r"か[。]?$|ですか|ますか|でしょうか|のかな|かな[。]?$|^(?:なぜ|どうして|どの|何|いつ|どこ|誰)|教えて(?:もらえ|くれ|ください)"),
    chatter=_p(
        r"^(?:ありがとう|どうも|了解|りょうかい|わかりました|承知|オーケー|いいね|いいですね|良さそう|完璧|おはよう|こんにちは|こんばんは"
        r"|お疲れ|よろしく|すごい|なるほど)|と思う[。]?$|と思います[。]?$|かもしれない|みたい[。]?$|っぽい|気がする"
    ),
    request=_p(
        r"(?:直して|修正して|追加して|実装して|リファクタ|リネームして|名前を変えて|書いて|作って|削除して|消して|確認して|見て|調べて"
        r"|実行して|動かして|更新して|説明して|変更して)(?:ください|くれ|ほしい|もらえ|もらえると)?|しよう[。！]?$|しましょう[。！]?$"
    ),
    at_hand=_p(r"この(?:関数|メソッド|クラス|ファイル|モジュール|テスト|バグ|エラー|問題|PR|変更|コミット|スクリプト|変数|クライアント)|今の|さっきの|試しに|様子見|てみ(?:た|ました|る|ます)"),
    one_off=_p(r"今回だけ|今回は|今回のみ|今日だけ|本日のみ|(?:この|今回の)(?:コミット|PR|プルリクエスト|デプロイ)(?:だけ|のみ)|一回だけ|一度だけ|例外的に|今だけ"),
    temporary=_p(r"当面|しばらく|一時的に|暫定|今週|来週まで|まで|まだ|とりあえず|当分|今日|明日|今夜|今晩"),
    durable=_p(r"常に|いつも|必ず|絶対|今後|これから|以後|ずっと|デフォルトで|基本的に|原則|毎回|すべて|全て|全部|このリポジトリ|このプロジェクト|このチーム|もう\S{0,8}ない"),
    normative=_p(r"なければならない|なければいけない|なくてはいけない|ないといけない|べき|禁止|ないで|ないこと|る(?:こと|事)[。.！!]?$|(?:決まり|ルール|約束)(?:です)?[。.！!]?$|てはいけない|てはだめ|ちゃだめ|使って|使うこと|ではなく|じゃなく|ようにして"),
    decision=_p(r"決定|決めた|決めました|決まった|決まりました|ことにした|ことにしました|ことになった|採用|選んだ|選びました|合意|にします|でいきます|で行きます|にしよう"),
    preference=_p(r"好き|好み|ほうがいい|方がいい|がいいです|てほしい|と嬉しい|合って|私には|私にとって|個人的に"),
    team=_p(r"^(?:うちでは|うちの|私たち|我々|弊社|チームでは)"),
    lead_in=_p(r"^(?:メモ|注意|注|備考|決定|決定事項|決まり|決まりごと|ルール|規約|方針|重要|参考|補足|ちなみに|参考までに|覚えておいて|念のため)\s*[：:、,]?\s*"),
    fact=_p(r"ポート|プロファイル|バージョン|パス|ディレクトリ|フォルダ|ホスト|URL|エンドポイント|データベース|DB|リージョン|クラスタ|バケット|レジストリ|エイリアス|インデックス|環境変数|で動いて|で動作|で待ち受け|にあります|にある|です"),
    convention=_p(r"に置き|に置く|に入れ|の隣|という名前|の形式|に従|で始め|で終わ|に保存|から読み|に書き|を持って|ごとに|各"),
    narration=_p(r"昨日|先週|先月|去年|前回|以前|この前|なかった|しまった"),
    status=_p(r"失敗|落ちる|落ちて|通った|グリーン|動かない|エラー|壊れ|タイムアウト|遅い|バグ|おかしい|クラッシュ"),
    correction=_p(r"^(?:訂正|間違え|すみません|ごめん|やっぱり|実は|いや|待って|ちょっと待って|気が変わ)|気が変わった|ではなくて|じゃなくて"),
    state_change=_p(
        r"に移行|へ移行|に上げ|に切り替え|へ切り替え|に変更し|に変え|に移し|に移っ|に移り|へ移|に更新し|にアップグレード|に乗り換え|今は"
    ),
    also=_p(r"^(?:あと|それと|さらに|加えて|また)|も(?:必ず|コミット|PR|実行|走らせ)"),
    retraction=_p(r"やめ|使わない|廃止|代わりに|ではなく|じゃなく|不要|なし(?:で|に)"),
    terse=_p(r"ではなく|じゃなく|より|なし|無し|不要|だけ|のみ|ごとに|一つの.{1,12}に一|ずつ"),
)

KOREAN = Lexicon(
    language="ko",
    question=_p(r"(?:까|니|나요|가요|죠|래요|는지)[.]?$|^(?:왜|어떻게|언제|어디|무엇|뭐|어느|누가)|궁금"),
    chatter=_p(
        r"^(?:고마워|고맙|감사|네[,.! ]|넵|예[,.]|좋아요|좋아 보|좋네|완벽|알겠|오케이|안녕|좋은 아침|수고|잘 부탁)"
        r"|것 같아|것 같습니다|같은데|아마|듯해|듯합니다"
    ),
    request=_p(
        r"(?:고쳐|수정해|추가해|구현해|리팩터링해|바꿔|변경해|작성해|만들어|삭제해|지워|확인해|봐|찾아|실행해|돌려|업데이트해|설명해|알려)\s*(?:줘|주세요|줄래|주실래요|줘요|줘야)"
        r"|하자[.!]?$|바꾸자|해 ?줘야"
    ),
    at_hand=_p(r"이 (?:함수|메서드|클래스|파일|모듈|테스트|버그|에러|오류|문제|PR|변경|커밋|스크립트|변수|클라이언트)|이번 변경|방금|시험 삼아|한번 보려고"),
    one_off=_p(r"이번만|이번에만|이번에는|이번 커밋|오늘만|이번 한 번|한 번만|딱 한 번|예외적으로|지금만"),
    temporary=_p(r"당분간|일단|임시로|잠시|이번 주|까지|아직|오늘|내일|오늘 밤"),
    durable=_p(r"항상|늘|언제나|절대|반드시|무조건|앞으로|이제부터|기본적으로|기본으로|원칙적으로|매번|모든|이 저장소|이 프로젝트|이 레포|이 팀"),
    normative=_p(r"해야|하면 안|하지 마|지 마세요|지 말|금지|안 됩니다|안 돼요|사용해|써 주세요|쓰세요|사용하세요|말고|대신|아니라|되어야|돼야"),
    decision=_p(r"결정|하기로 했|기로 했|기로 합의|정했|정해졌|합의|선택했|골랐|채택|로 가기로|으로 가기로|쓰기로|사용하기로|로 갑니다|으로 갑니다"),
    preference=_p(r"좋아해|좋아합니다|선호|편해|편합니다|좋겠어|좋겠습니다|취향|저한테는|저에게는|제일 좋"),
    team=_p(r"^(?:우리|저희|팀에서는)"),
    lead_in=_p(r"^(?:참고|메모|주의|결정|규칙|규약|약속|중요|알림|참고로|기억해|덧붙여)\s*[:：,]?\s*"),
    fact=_p(r"포트|프로필|버전|경로|디렉터리|폴더|호스트|주소|URL|엔드포인트|데이터베이스|DB|리전|클러스터|버킷|레지스트리|별칭|인덱스|환경 ?변수|에서 (?:동작|돌아|실행)|에 있|입니다|이에요|예요"),
    convention=_p(r"에 둡|에 두|에 넣|옆에|이름은|형식|따릅|따른|로 시작|저장합|저장해|에서 읽|을 가지|이 있습니다|마다|각 "),
    narration=_p(r"어제|지난주|지난달|작년|지난번|예전에|했었|해야 했"),
    status=_p(r"실패|안 돼|안돼|에러|오류|깨져|깨졌|타임아웃|느려|버그|멈춰|크래시"),
    correction=_p(r"^(?:정정|아니|죄송|잠깐|아 참|사실은|생각이 바뀌)|생각이 바뀌었|가 아니라|이 아니라"),
    state_change=_p(
        r"(?:로|으로)\s*(?:다\s*)?(?:옮겼|바꿨|바꾸었|바뀌었|올렸|전환했|이전했|마이그레이션했|업그레이드했|변경했|갈아탔|넘어갔)|이제는?\s"
    ),
    also=_p(r"^(?:그리고|또|또한|추가로)|도\s"),
    retraction=_p(r"말고|대신|안 써|쓰지 않|폐기|그만|더 이상|빼고|뺍니다|빼요"),
    terse=_p(r"말고|대신|없이|금지|만\b|만[,. ]|마다|하나에 하나|보다"),
)

SPANISH = Lexicon(
    language="es",
    question=_p(r"^¿|^(?:por qué|qué|cómo|cuándo|dónde|cuál|quién|puedes|podrías|me dices|sabes)\b|\bme pregunto\b"),
    chatter=_p(
        r"^(?:gracias|muchas gracias|vale|ok|perfecto|genial|estupendo|listo|de acuerdo|entendido|buenos días|buenas tardes"
        r"|buenas noches|hola|bien|me parece bien|sí|claro|creo que|me parece que|quizás?|tal vez|a lo mejor|parece que|supongo que)\b"
    ),
    request=_p(
        r"^(?:por favor,?\s+)?(?:arregla|corrige|añade|agrega|implementa|refactoriza|renombra|cambia|actualiza|escribe|crea|elimina"
        r"|borra|quita|mueve|depura|investiga|mira|revisa|comprueba|prueba|ejecuta|corre|haz|muéstrame|explica|explícame|pon)\b"
        r"|^(?:puedes|podrías)\b|^vamos a\s+(?!usar\b)\w+|^necesito que\b|^quiero que\b"
    ),
    at_hand=_p(r"\b(?:este|esta|estos|estas|ese|esa)\s+(?:función|método|clase|archivo|fichero|módulo|test|prueba|bug|error|problema|PR|cambio|script|variable|cliente)\b|\bpara ver si\b|\ba ver si\b"),
    one_off=_p(
        r"\b(?:esta vez|por esta vez|por una vez|solo esta vez|sólo esta vez|(?:solo|sólo)\s+(?:por\s+)?hoy|por hoy|hoy solo|hoy sólo"
        r"|(?<!no )(?:solo|sólo|solamente|únicamente)\s+(?:para|en)\s+(?:este|esta)\b|excepcionalmente|de forma excepcional)"
    ),
    temporary=_p(r"\b(?:por ahora|de momento|por el momento|temporalmente|provisionalmente|esta semana|hasta|todavía no|aún no|todavía|hoy|mañana|esta noche)\b"),
    durable=_p(
        r"\b(?:siempre|nunca|jamás|a partir de ahora|de ahora en adelante|desde ahora|en adelante|por defecto|por norma"
        r"|en este (?:repo|repositorio|proyecto|código)|en todos|cada vez|para siempre|definitivamente|antes de cada|después de cada|en cada)\b"
    ),
    normative=_p(
        r"\b(?:hay que|tienes que|tenemos que|tiene que|tienen que|debes|debemos|debe|deben|debería|deberían|no está permitido"
        r"|está prohibido|prohibido|no se permite|no se puede|obligatorio|asegúrate|usa|utiliza|en vez de|en lugar de)\b|^no\s+\w+"
    ),
    decision=_p(
        r"\b(?:decidimos|hemos decidido|decidí|decisión|acordamos|hemos acordado|elegimos|hemos elegido|optamos|vamos con"
        r"|nos quedamos con|seguimos con|nos pasamos a|pasamos|apostamos por|nos decantamos)\b"
    ),
    preference=_p(r"\b(?:prefiero|preferiría|me gusta|me gustan|me encanta|me funciona|me funcionan|me va mejor|para mí|mi preferencia|me quedo con)\b"),
    team=_p(r"^(?:nosotros|nosotras|nuestro|nuestra|nuestros|nuestras|en el equipo)\b|\b(?:usamos|hacemos|solemos|desplegamos)\b"),
    lead_in=_p(r"^(?:nota|ojo|importante|decisión|convención|regla|norma|recuerda|aviso|para que lo sepas|para tu información|dato|info)\b\s*[:,]?\s*"),
    fact=_p(
        r"\b(?:puerto|perfil|versión|ruta|directorio|carpeta|host|url|endpoint|base de datos|bd|región|cluster|clúster|bucket"
        r"|registro|alias|índice|variables? de entorno|corre (?:en|con|sobre)|escucha en|está en|están en|vive en|apunta a|es)\b"
    ),
    convention=_p(r"\b(?:viven|vive|van en|va en|se llaman|se llama|se guardan|se guarda|se leen|se lee|se escriben|siguen|sigue|empiezan con|terminan en|tiene su propio|tienen su propio|cada)\b"),
    narration=_p(r"\b(?:ayer|anoche|la semana pasada|el mes pasado|el año pasado|la última vez|hace \w+|tuve que|tuvimos que|intenté|intentamos|usaba|usábamos)\b"),
    status=_p(r"\b(?:falla|fallan|falló|fallando|roto|rota|se rompe|error|errores|no funciona|en verde|en rojo|timeout|se cuelga|lento|bug)\b"),
    correction=_p(r"^(?:en realidad|corrijo|corrección|perdón|perdona|mejor dicho|quise decir|espera|pensándolo mejor|cambio de planes|cambié de opinión)\b|\bno\s+\S+,\s*sino\b"),
    state_change=_p(
        r"\b(?:migramos|migré|migrado|migrada|cambiamos|cambié|cambiado|pasamos|pasé|pasado|actualizamos|actualicé|actualizado|movimos|movido|subimos|subido)\b.{0,60}?\b(?:a|al|hacia)\b"
        r"|\bahora\s+(?:usa|usamos|corre|está|es|vive)\b"
    ),
    also=_p(r"^(?:y\s+)?(?:también|además)\b|\btambién\b"),
    retraction=_p(r"\b(?:ya no|nada de|en vez de|en lugar de|olvida|olvídate|descarta|fuera)\b"),
    terse=_p(r"\b(?:en vez de|en lugar de|no|sin|nada de|solo|sólo|solamente|por cada|cada|por)\b|\s>\s"),
    reason=re.compile(r"(?:,\s*|\s)(?:porque|ya que|puesto que)\s+(.+)$", _FLAGS),
)

PORTUGUESE = Lexicon(
    language="pt",
    question=_p(r"^(?:por que|porque|o que|como|quando|onde|qual|quem|você pode|pode me|será que|sabe)\b"),
    chatter=_p(
        r"^(?:obrigado|obrigada|valeu|beleza|blz|ok|perfeito|ótimo|show|legal|certo|entendi|bom dia|boa tarde|boa noite|oi|olá"
        r"|tá ótimo|tá bom|sim|claro|acho que|talvez|parece que|provavelmente|imagino que)\b"
    ),
    request=_p(
        r"^(?:por favor,?\s+)?(?:conserta|corrige|corrija|arruma|adiciona|adicione|implementa|implemente|refatora|renomeia|renomeie"
        r"|muda|mude|altera|atualiza|atualize|escreve|escreva|cria|crie|remove|remova|apaga|apague|move|investiga|olha|verifica"
        r"|verifique|testa|roda|rode|executa|faz|faça|mostra|explica|coloca)\b"
        r"|^(?:você pode|pode|poderia)\b|^vamos\s+(?!de\b|usar\b|com\b|continuar\b)\w+|^preciso que\b|^quero que\b"
    ),
    at_hand=_p(r"\b(?:este|esta|esse|essa|nesse|nessa|neste|nesta)\s+(?:função|método|classe|arquivo|módulo|teste|bug|erro|problema|PR|mudança|script|variável|cliente)\b|\bpr?a ver se\b|\bpara ver se\b"),
    one_off=_p(
        r"\b(?:desta vez|dessa vez|só desta vez|só dessa vez|uma vez só|(?:só|somente|apenas)\s+(?:por\s+)?hoje|por hoje|hoje só|hoje somente"
        r"|(?<!não )(?:só|somente|apenas)\s+(?:neste|nesse|nesta|nessa|para este|pra este|para esse|pra esse)\b|excepcionalmente)"
    ),
    temporary=_p(r"\b(?:por enquanto|por ora|temporariamente|provisoriamente|esta semana|essa semana|até|ainda não|ainda(?=\s*[.!]?$)|hoje|amanhã|hoje à noite|esta noite)\b"),
    durable=_p(
        r"\b(?:sempre|nunca|jamais|a partir de agora|daqui (?:pra|para) frente|de agora em diante|por padrão"
        r"|(?:neste|nesse) (?:repo|repositório|projeto)|toda vez|de vez|definitivamente|em todos|antes de cada|depois de cada|em cada)\b"
    ),
    normative=_p(
        r"\b(?:tem que|temos que|têm que|precisa|precisam|precisamos|deve|devem|devemos|deveria|deveriam|não é permitido|é proibido"
        r"|proibido|obrigatório|garanta|certifique-se|use|usa|utilize|em vez de|ao invés de)\b|^não\s+\w+"
    ),
    decision=_p(r"\b(?:decidimos|decidi|decisão|combinamos|acordamos|escolhemos|optamos|vamos de|vamos com|ficamos com|continuamos com|vamos continuar|mudamos|migramos|adotamos)\b"),
    preference=_p(r"\b(?:prefiro|preferiria|eu gosto|gosto de|curto|adoro|pra mim|para mim|minha preferência|funcionam? melhor)\b"),
    team=_p(r"^(?:nós|a gente|nosso|nossa|nossos|nossas)\b|\b(?:usamos|fazemos|costumamos)\b"),
    lead_in=_p(r"^(?:nota|obs|observação|atenção|importante|decisão|convenção|regra|lembrete|lembre-se|só pra (?:você )?saber|para sua informação|pra sua informação|dica|info)\b\s*[:,]?\s*"),
    fact=_p(
        r"\b(?:porta|perfil|versão|caminho|diretório|pasta|host|url|endpoint|banco|base de dados|região|cluster|bucket|registro"
        r"|alias|índice|variáve(?:l|is) de ambiente|roda (?:no|na|em)|escuta (?:na|no)|fica(?:m)? (?:na|no|em)|está (?:na|no|em)|aponta para|é)\b"
    ),
    convention=_p(r"\b(?:ficam|fica|vão em|vai em|se chamam|se chama|são guardad\w+|é guardad\w+|são lid\w+|é lid\w+|são escrit\w+|seguem|segue|começam com|terminam em|tem seu próprio|têm seu próprio|cada)\b"),
    narration=_p(r"\b(?:ontem|semana passada|mês passado|ano passado|da última vez|na última vez|há \w+|tive que|tivemos que|tentei|tentamos|usava|usávamos)\b"),
    status=_p(r"\b(?:falha|falham|falhou|falhando|quebrado|quebrada|quebra|erro|erros|não funciona|verde|vermelho|timeout|trava|lento|bug)\b"),
    correction=_p(r"^(?:na verdade|corrigindo|correção|desculpa|quer dizer|quis dizer|espera|pensando bem|mudei de ideia|mudança de planos)\b|\bnão\s+\S+,\s*(?:mas|e sim)\b"),
    state_change=_p(
        r"\b(?:migramos|migrei|migrou|migraram|migrado|mudamos|mudei|mudou|mudaram|mudado|passamos|passei|passou|passaram|atualizamos|atualizei|atualizou|atualizado"
        r"|movemos|moveu|trocamos|troquei|trocou|trocaram|subimos|subiu)\b.{0,60}?\b(?:para|pra|pro|ao|à|a|pelo|pela)\b"
        r"|\bagora\s+(?:usa|usamos|roda|está|é|fica)\b"
    ),
    also=_p(r"^(?:e\s+)?(?:também|além disso)\b|\btambém\b"),
    retraction=_p(r"\b(?:não mais|nada de|em vez de|ao invés de|esquece|descarta|chega de)\b"),
    terse=_p(r"\b(?:em vez de|ao invés de|não|sem|nada de|só|somente|apenas|por|cada)\b|\s>\s"),
    reason=re.compile(r"(?:,\s*|\s)(?:porque|pois|já que)\s+(.+)$", _FLAGS),
)

FRENCH = Lexicon(
    language="fr",
    question=_p(
        r"^(?:pourquoi|quoi|qu'est-ce|comment|quand|où|quel|quelle|quels|quelles|qui|est-ce que|peux-tu|tu peux|pourrais-tu"
        r"|sais-tu)\b|\bje me demande\b|\b\w+-(?:il|elle|on|tu|vous|nous|ils|elles)\b"
    ),
    chatter=_p(
        r"^(?:merci|d'accord|ok|parfait|super|génial|nickel|top|bien|très bien|compris|entendu|bonjour|salut|bonsoir|oui"
        r"|ça marche|ça me va|impeccable|je pense que|je crois que|peut-être|on dirait|il semble|apparemment|sans doute)\b"
    ),
    request=_p(
        r"^(?:s'il te plaît,?\s+|stp,?\s+)?(?:corrige|répare|ajoute|implémente|refactorise|renomme|change|modifie|mets à jour"
        r"|écris|crée|supprime|enlève|déplace|débogue|regarde|vérifie|teste|lance|exécute|fais|montre|explique)\b"
        r"|^(?:tu peux|peux-tu|pourrais-tu|est-ce que tu peux)\b|^\w+ons\b|^j'ai besoin que\b|^je veux que\b"
    ),
    at_hand=_p(r"\b(?:ce|cet|cette|ces)\s+(?:fonction|méthode|classe|fichier|module|test|bug|erreur|problème|PR|changement|script|variable|client)s?\b|\bpour voir si\b|\bà l'essai\b"),
    one_off=_p(
        r"\b(?:cette fois|pour cette fois|pour une fois|(?:juste|seulement|uniquement) aujourd'hui|aujourd'hui seulement"
        r"|(?<!pas )(?:juste|uniquement|seulement|rien que) pour (?:ce|cette|cet)\b|exceptionnellement|à titre exceptionnel)"
    ),
    temporary=_p(r"\b(?:pour l'instant|pour le moment|temporairement|provisoirement|en attendant|cette semaine|jusqu'à|pas encore|pas tout de suite|aujourd'hui|demain|ce soir|cette nuit)"),
    durable=_p(
        r"\b(?:toujours|jamais|désormais|dorénavant|à partir de maintenant|à l'avenir|par défaut|dans ce (?:dépôt|repo|projet)"
        r"|partout|chaque fois|définitivement|pour de bon|systématiquement|avant chaque|après chaque|à chaque)\b"
    ),
    normative=_p(
        r"\b(?:il faut|faut|doit|doivent|dois|devons|devrait|devraient|sont interdits|est interdit|interdit|interdits|pas le droit"
        r"|obligatoire|assure-toi|utilise|utilisez|plutôt que|au lieu de)\b|\bne\s+\w+\s+(?:pas|jamais)\b|\bn'\w+\s+(?:pas|jamais)\b|,\s*pas\s+\w+"
    ),
    decision=_p(
        r"\b(?:on a décidé|nous avons décidé|j'ai décidé|décision|on a choisi|nous avons choisi|on part sur|on est partis sur"
        r"|on garde|on reste sur|on a retenu|nous avons retenu|on passe|on s'est mis d'accord|on a convenu|nous avons convenu|on adopte)\b"
    ),
    preference=_p(r"\b(?:je préfère|je préférerais|j'aime|j'adore|pour moi|ma préférence|me convient|je trouve)\b"),
    team=_p(r"^(?:on|nous|notre|nos|chez nous)\b|\b(?:on utilise|nous utilisons|on déploie|nous déployons)\b"),
    lead_in=_p(r"^(?:note|nb|attention|important|décision|convention|règle|rappel|pour info|pour information|pour mémoire|à savoir|info|astuce)\b\s*[:,]?\s*"),
    fact=_p(
        r"\b(?:port|profil|version|chemin|répertoire|dossier|hôte|url|endpoint|base|région|cluster|bucket|registre|alias|index"
        r"|variables? d'environnement|tourne (?:sous|sur)|écoute sur|est (?:sur|dans|à)|sont (?:sur|dans)|pointe vers|est)\b"
    ),
    convention=_p(
        r"\b(?:vivent|vit|sont à côté|vont dans|va dans|s'appellent|s'appelle|sont nommés|sont stockés|est stocké|sont stockées"
        r"|sont lues|sont lus|sont écrits|suivent|suit|commencent par|finissent par|a son propre|ont leur propre|chaque)\b"
    ),
    narration=_p(r"\b(?:hier|la semaine dernière|le mois dernier|l'an dernier|la dernière fois|il y a|j'ai dû|on a dû|j'ai essayé|on a essayé)\b"),
    status=_p(r"\b(?:échoue|échouent|a échoué|plante|cassé|cassée|erreur|erreurs|vert|verte|rouge|ne marche pas|ne fonctionne pas|timeout|bloque|lent|bug)\b"),
    correction=_p(r"^(?:en fait|correction|pardon|désolé|je voulais dire|plutôt|attends|réflexion faite|finalement|changement de plan|j'ai changé d'avis)\b|\bpas\s+\S+,\s*mais\b"),
    state_change=_p(
        r"\b(?:migré|migrés|migrée|passé|passés|passée|basculé|basculés|changé|mis à jour|monté|montés|déplacé|déménagé)\b.{0,60}?\b(?:à|au|aux|vers|sur|en)\b"
        r"|\bmaintenant\s+(?:sur|on utilise|tourne|est)\b"
    ),
    also=_p(r"^(?:et\s+)?(?:aussi|en plus|également)\b|\baussi\b"),
    retraction=_p(r"\b(?:plus de|fini|à la place de|au lieu de|oublie|abandonne|on abandonne)\b"),
    terse=_p(r"\b(?:plutôt que|au lieu de|pas|pas de|sans|jamais de|que|uniquement|seulement|par)\b|\s>\s"),
    reason=re.compile(r"(?:,\s*|\s)(?:parce que|car|puisque)\s+(.+)$", _FLAGS),
)

GERMAN = Lexicon(
    language="de",
    question=_p(
        r"^(?:warum|wieso|weshalb|was|wie|wann|wo|welche[rsmn]?|wer|kannst du|könntest du|weißt du|müssen wir|sollen wir"
        r"|sollten wir|gibt es)\b|\bich frage mich\b"
    ),
    chatter=_p(
        r"^(?:danke|vielen dank|ok|okay|passt|super|perfekt|prima|klasse|alles klar|verstanden|guten morgen|guten tag|hallo|moin"
        r"|servus|ja|genau|sieht gut aus|weiter geht's|ich glaube|ich denke|vielleicht|wahrscheinlich|scheint|anscheinend|vermutlich)\b"
    ),
    request=_p(
        r"^(?:bitte\s+)?(?:behebe|repariere|fix|fixe|füg|füge|implementier|implementiere|refaktorier|benenn|ändere|änder|aktualisier"
        r"|schreib|schreibe|erstell|erstelle|lösch|lösche|entfern|entferne|verschieb|debugg|schau|prüf|prüfe|teste|mach|zeig|erklär|erkläre)\b"
        r"|^(?:kannst du|könntest du|würdest du)\b|^lass uns\b|^ich brauche,? dass\b|^ich möchte,? dass\b"
    ),
    at_hand=_p(r"\b(?:diese[nmrs]?|dieser)\s+(?:Funktion|Methode|Klasse|Datei|Modul|Test|Bug|Fehler|Problem|PR|Änderung|Skript|Variable|Client)\b|\bum zu sehen\b|\bzum Testen\b|\bprobeweise\b|\bmal testen\b"),
    one_off=_p(
        r"\b(?:diesmal|dieses mal|dieses eine mal|(?<!nicht )nur heute|heute nur|(?<!nicht )nur für (?:diesen|dieses|diese)\b|ausnahmsweise|einmalig|nur einmal)"
    ),
    temporary=_p(r"\b(?:vorerst|vorläufig|fürs erste|erstmal|erst mal|vorübergehend|diese woche|bis|noch nicht|heute|morgen|heute abend|heute nacht)\b"),
    durable=_p(
        r"\b(?:immer|nie|niemals|ab jetzt|ab sofort|von nun an|künftig|zukünftig|in zukunft|standardmäßig|grundsätzlich"
        r"|in diesem (?:Repo|Repository|Projekt)|überall|jedes mal|dauerhaft|für immer|(?:vor|nach|bei) jede[mrn]?)\b"
    ),
    normative=_p(
        r"\b(?:muss|müssen|musst|soll|sollen|sollte|sollten|darf nicht|dürfen nicht|darfst nicht|nicht erlaubt|verboten|untersagt"
        r"|pflicht|verpflichtend|stell sicher|achte darauf|nimm|verwende|verwendet|benutze|nutze|kein|keine|keinen|nicht|statt|anstatt)\b"
    ),
    decision=_p(
        r"\b(?:entschieden|beschlossen|entscheidung|wir nehmen|nehmen wir|wir bleiben bei|bleiben wir bei|wir gehen mit|wir setzen auf|setzen wir auf|geeinigt|festgelegt"
        r"|wir stellen um|umgestellt|wir wechseln|bleibt ab jetzt|gelandet)\b"
    ),
    preference=_p(r"\b(?:ich bevorzuge|ich mag|ich hätte gern|ich hätte lieber|mir wäre|mir wären|lieber|am liebsten|für mich|meine vorliebe|ich finde)\b"),
    team=_p(r"^(?:wir|unser|unsere|unseren|unserem|bei uns)\b|\bwir (?:nutzen|verwenden|benutzen|deployen)\b"),
    lead_in=_p(r"^(?:hinweis|notiz|achtung|wichtig|entscheidung|konvention|regel|vereinbarung|zur info|nur zur info|fyi|merke?\s+dir|merke|denk\s+dran|denk\s+daran|erinnerung|info|tipp)\b\s*[:,]?\s*"),
    fact=_p(
        r"\b(?:port|profil|version|pfad|verzeichnis|ordner|host|url|endpoint|datenbank|db|region|cluster|bucket|registry|alias"
        r"|index|umgebungsvariablen?|läuft (?:auf|unter)|lauscht auf|liegt (?:in|auf)|liegen in|zeigt auf|ist)\b"
    ),
    convention=_p(
        r"\b(?:liegen|liegt|kommen nach|kommt nach|kommen in|gehören|gehört|heißen|heißt|gespeichert|gelesen|geschrieben|folgen"
        r"|folgt|beginnen mit|enden auf|hat sein eigenes|haben ihr eigenes|jeder|jede|jedes)\b"
    ),
    narration=_p(r"\b(?:gestern|letzte woche|letzten monat|letztes jahr|letztes mal|beim letzten mal|vor (?:\d+|einer|einem|zwei|drei|ein paar|kurzem|langem)\b|musste|mussten|habe versucht|haben versucht|hatte|hatten|früher)\b"),
    status=_p(r"\b(?:schlägt fehl|schlagen fehl|fehlgeschlagen|kaputt|stürzt ab|fehler|grün|rot|funktioniert nicht|geht nicht|timeout|hängt|langsam|bug)\b"),
    correction=_p(r"^(?:eigentlich|korrektur|sorry|pardon|ich meinte|vielmehr|warte|planänderung|ich hab's mir anders überlegt|doch lieber)\b|anders überlegt|\bnicht\s+\S+,\s*sondern\b"),
    state_change=_p(
        r"\b(?:umgestiegen|umgezogen|migriert|gewechselt|aktualisiert|hochgezogen|angehoben|umgestellt|geupdatet|upgegradet|gehoben|verschoben)\b"
        r"|\b(?:läuft|laufen|liegt|liegen|ist|sind)\s+(?:jetzt|nun)\b|\b(?:jetzt|nun)\s+(?:auf|mit|läuft|laufen|ist|sind)\b"
    ),
    also=_p(r"^(?:und\s+)?(?:außerdem|auch|zusätzlich|ebenfalls)\b|\bauch\b"),
    retraction=_p(r"\b(?:nicht mehr|kein\w*\s.{0,20}mehr|statt|anstatt|vergiss|ist raus|sind raus|fliegt raus|ersetzt)\b"),
    terse=_p(r"\b(?:statt|anstatt|nicht|kein\w*|ohne|nur|pro|je)\b|\s>\s"),
    reason=re.compile(r"(?:,\s*|\s)(?:weil|da|denn)\s+(.+)$", _FLAGS),
)

RUSSIAN = Lexicon(
    language="ru",
    question=_p(
        r"^(?:почему|зачем|что|как|когда|где|какой|какая|какое|какие|кто|можешь|можете|не мог бы|не могли бы|нужно ли|надо ли"
        r"|стоит ли)\b|\bли\b|\bинтересно\b"
    ),
    chatter=_p(
        r"^(?:спасибо|благодарю|ок|окей|хорошо|отлично|супер|понял|поняла|ясно|привет|доброе утро|добрый день|добрый вечер|да|ага"
        r"|класс|норм|нормально|продолжаем|думаю|кажется|по-моему|наверное|возможно|похоже|видимо)\b"
    ),
    request=_p(
        r"^(?:пожалуйста,?\s+)?(?:исправь|почини|добавь|реализуй|отрефактори|переименуй|поменяй|измени|обнови|напиши|создай|удали"
        r"|убери|перенеси|отладь|посмотри|проверь|протестируй|запусти|сделай|покажи|объясни|расскажи)\b"
        r"|^(?:можешь|можете|не мог бы)\b|^давай(?:те)?\b|^нужно,? чтобы ты\b|^хочу,? чтобы ты\b"
    ),
    at_hand=_p(r"\b(?:этот|эта|это|эту|этом|этой|эти)\s+(?:функци\w*|метод\w*|класс\w*|файл\w*|модул\w*|тест\w*|баг\w*|ошибк\w*|проблем\w*|PR|изменени\w*|скрипт\w*|переменн\w*|клиент\w*)|просто посмотреть|чтобы посмотреть|на пробу|для проверки"),
    one_off=_p(r"\b(?:в этот раз|на этот раз|(?<!не )только сегодня|сегодня только|(?<!не )только для (?:этого|этой)|(?<!не )только в (?:этом|этой)|один раз|разово|в виде исключения|в порядке исключения|единожды)\b"),
    temporary=_p(r"\b(?:пока|пока что|временно|на время|на этой неделе|до|пока не|сегодня|завтра|этой ночью)\b"),
    durable=_p(
        r"\b(?:всегда|никогда|впредь|отныне|с этого момента|с сегодняшнего дня|по умолчанию|в этом (?:репозитории|репо|проекте)"
        r"|везде|каждый раз|окончательно|навсегда|перед каждым|перед каждой|после каждого|после каждой|при каждом)\b"
    ),
    normative=_p(
        r"\b(?:нужно|надо|необходимо|должен|должна|должно|должны|следует|обязательно|нельзя|запрещено|запрещены|запрещается"
        r"|не разрешается|используй|используйте|пользуйся|а не|вместо)\b|^не\s+\w+|\bне\s+(?:трогай|правь|меняй|делай|пушь|используй|удаляй)\b"
    ),
    decision=_p(
        r"\b(?:решили|решение|договорились|выбрали|остановились на|остаёмся на|остаемся на|берём|берем|переводим|перешли на"
        r"|переходим на|приняли|утвердили|оставляем)\b"
    ),
    preference=_p(r"\b(?:предпочитаю|мне нравится|мне нравятся|я люблю|мне удобнее|мне удобно|мне бы хотелось|хотелось бы|для меня|моё предпочтение|мое предпочтение|лучше)\b"),
    team=_p(r"^(?:мы|у нас|наш|наша|наше|наши)\b|\bмы (?:используем|деплоим)\b"),
    lead_in=_p(r"^(?:заметка|примечание|внимание|важно|решение|соглашение|правило|напоминание|к сведению|для справки|на заметку|инфо|запомни)\b\s*[:,—-]?\s*"),
    fact=_p(
        r"\b(?:порт\w*|профил\w*|верси\w*|пут\w*|каталог\w*|директори\w*|папк\w*|хост\w*|url|адрес\w*|эндпоинт\w*|баз\w*|бд|регион\w*"
        r"|кластер\w*|бакет\w*|реестр\w*|алиас\w*|индекс\w*|переменн\w* окружения|работает на|слушает|лежит в|лежат в|находится)\b|\s—\s"
    ),
    convention=_p(r"\b(?:лежат|лежит|хранятся|хранится|называются|называется|читаются|читается|пишутся|следуют|начинаются с|складываются|идут в|у каждого|каждый|каждая|свой)\b"),
    narration=_p(r"\b(?:вчера|на прошлой неделе|в прошлом месяце|в прошлом году|в прошлый раз|раньше|пришлось|пытался|пытались|было|только что)\b"),
    status=_p(r"\b(?:падает|падают|упал|сломан\w*|ломается|ошибк\w*|зелён\w*|зелен\w*|красн\w*|не работает|не помогает|таймаут\w*|зависает|тормозит|медленно|баг)\b"),
    correction=_p(r"^(?:на самом деле|поправка|точнее|вернее|извини|я имел в виду|стоп|передумал|передумала|хотя нет)\b|\bпередумал|\bне\s+\S+,\s*а\b"),
    state_change=_p(
        r"\b(?:перешли|перешла|перешёл|перешел|ушли|ушла|ушёл|ушел|переехали|переехал|мигрировали|мигрировал|обновили|обновил|подняли|поднял"
        r"|переключились|переключили|переключил|сменили|сменил|поменяли|поменял|перевели|перевёл|перевел)\b.{0,60}?\b(?:на|в)\b"
        r"|\bтеперь\s+(?:на|используем|работает|живёт|живет|крутится)\b"
    ),
    also=_p(r"^(?:и\s+)?(?:ещё|еще|также|тоже|кроме того)\b|\b(?:тоже|также)\b"),
    retraction=_p(r"\b(?:больше не|вместо|забудь|убираем|отказались|выкинули)\b"),
    terse=_p(r"\b(?:вместо|не|без|никаких|только|на каждый|на каждую|на каждое|по одному|по одной)\b|\s>\s"),
    reason=re.compile(r"(?:,\s*|\s)(?:потому что|так как|поскольку)\s+(.+)$", _FLAGS),
)

# "From now on" in the nine languages: a statement that holds from here on is not a past event,
# even in the past tense ("we switched the monorepo to pnpm for good").
FROM_NOW_ON = re.compile(
    r"\b(?:for good|from now on|going forward|from here on|permanently|a partir de ahora|de ahora en adelante|para siempre"
    r"|definitivamente|a partir de agora|daqui (?:pra|para) frente|de vez|désormais|dorénavant|à partir de maintenant|pour de bon"
    r"|définitivement|ab jetzt|ab sofort|von nun an|künftig|für immer|dauerhaft|впредь|отныне|с этого момента|окончательно|навсегда)\b"
    r"|以后|今后|从现在开始|今後|これから|ずっと|앞으로|이제부터",
    _FLAGS,
)

LEXICONS: dict[str, Lexicon] = {
    lexicon.language: lexicon for lexicon in (ENGLISH, CHINESE, JAPANESE, KOREAN, SPANISH, PORTUGUESE, FRENCH, GERMAN, RUSSIAN)
}

_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
# Latin-script languages the lexicons cover; a short sentence is classified among these only.
LATIN_LANGUAGES = ("en", "es", "pt", "fr", "de")


@functools.cache
def _latin_identifier() -> Any:
    """py3langid's classifier restricted to `LATIN_LANGUAGES` (its model ships in the wheel; loaded once)."""
    import py3langid
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_modelpath(Path(py3langid.__file__).parent / MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LATIN_LANGUAGES))
    return identifier


# A reading of a Latin-script sentence below this probability is not tried ("go" is as likely
# German as English); a first reading below `UNSURE` falls back to English, the usual language
# of code-switched text.
RUNNER_UP_MIN = 0.2
UNSURE = 0.3


def language_of(text: str) -> str:
    """The language a user sentence is in, by script first, then by function words."""
    if _HANGUL.search(text):
        return "ko"
    if _KANA.search(text):
        return "ja"
    if _HAN.search(text):
        return "zh"
    if _CYRILLIC.search(text):
        return "ru"
    language, probability = _latin_identifier().classify(text)
    return str(language) if probability >= UNSURE else "en"


# How many readings of a Latin-script sentence are tried, most likely first.
LATIN_READINGS = 2


def likely_languages(text: str) -> list[str]:
    """`language_of(text)` first; for Latin-script text, the runner-up reading after it."""
    first = language_of(text)
    if first not in LATIN_LANGUAGES:
        return [first]
    ranked = [str(language) for language, probability in _latin_identifier().rank(text) if probability >= RUNNER_UP_MIN]
    return [first, *(language for language in ranked if language != first)][:LATIN_READINGS]


# A language the classifier gives less than this is not looked at even for a rule word.
OTHER_READING_MIN = 0.05


def other_latin_languages(text: str, readings: list[str]) -> list[str]:
    """The Latin-script languages not among `readings` that the classifier still gives some
    chance: a last look for an unmistakable rule word in a short sentence it misplaced."""
    if readings[0] not in LATIN_LANGUAGES:
        return []
    ranked = _latin_identifier().rank(text)
    return [str(language) for language, probability in ranked if probability >= OTHER_READING_MIN and language not in readings]


def lexicon_for(text: str) -> Lexicon:
    return LEXICONS[language_of(text)]
