"""The offline urgency decision: the red-flag table (:mod:`app.safety._patterns`) read clause by clause.

A cue counts unless its own clause says it is not happening now: negated just before it ("no chest pain"),
told as history ("a heart attack in 2019", "three years ago"), asked hypothetically ("what should I do if he
swallows a battery") or as a research or general-information question ("do clot busters improve stroke
recovery", "what are the signs of a stroke"). A clause that also says *now* ("again", "since this morning")
keeps its cue whatever else it says. Lethal-means requests are never excused by their phrasing: research
wording is how such a request is often dressed up. Missing an emergency is worse than an unneeded warning, so
history and research wording excuse only the clause that holds the cue; a detail buried in a long question
about a routine treatment still counts. An emergency's cue is also excused by "if" earlier in its sentence,
and by a message set in an exam, a story or a school task, unless the sentence (or the message) says *now*.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Final

from core import fold_accents

from ._patterns import FEVER, RED_FLAGS, Kind, RedFlag
from ._signs import EMERGENCY_SIGNS, EMERGENCY_STRONG, SELF_HARM_SIGNS, SELF_HARM_STRONG

__all__ = ["Finding", "detect", "normalise", "told_as_over"]

_FLAGS: Final = re.IGNORECASE


def _word_start(pattern: str) -> re.Pattern[str]:
    """``pattern`` matched at the start of a word only: "ate" is not the end of "carotid ... separate"."""
    return re.compile(r"\b(?:" + pattern + ")", _FLAGS)


_COMPILED: Final = tuple(
    (flag, _word_start(flag.cue), tuple(_word_start(g) for g in flag.with_)) for flag in RED_FLAGS
)
_EMERGENCY_SIGNS: Final = {name: _word_start(p) for name, p in EMERGENCY_SIGNS.items()}
_SELF_HARM_SIGNS: Final = {name: _word_start(p) for name, p in SELF_HARM_SIGNS.items()}
# Danger signs that make a second sign an emergency; fever and vomiting together alone are a stomach bug.
_MAJOR_SIGNS: Final = frozenset(EMERGENCY_SIGNS) - {"fever", "vomiting", "acute_onset"}
# Kinds in the order a question is labelled when it holds several: the guidance for self-harm and for a
# request for means also tells the reader to call for help now.
_PRIORITY: Final[dict[Kind, int]] = {"self_harm": 0, "lethal_means": 1, "emergency": 2}

# A turn in what is said ("but", "and now"): a clause boundary and a sentence boundary alike.
_TURN: Final = (
    r"\b(?:but|however|although|pero|aunque|mais|aber|doch|mas|porem|ma|maar)\b|"
    r"\b(?:and|y|et|und|e|en) (?:now|ahora|maintenant|jetzt|agora|ora|adesso|nu)\b"
)
# Clause boundaries: sentence ends (not the dot of "38.5"), semicolons, commas, colons, and "but".
_CLAUSE: Final = re.compile(
    r"(?:[.!?;:](?!\d)|,(?!\d)|\n|\s[-–—]\s|\((?!\d)|\)|" + _TURN + r"|\b(?:also|oh and|anyway|tambien|aussi|"
    r"ausserdem|auch|tambem|inoltre|anche|ook)\b)",
    _FLAGS,
)
# Sentence boundaries: a sentence end, or a turn; commas, colons and brackets are not.
_SENTENCE: Final = re.compile(r"(?:[.!?;](?!\d)|\n|" + _TURN + ")", _FLAGS)
_NEGATION: Final = re.compile(
    r"\b(?:no|not|never|without|denies|nobody|no one|nadie|niemand|ninguem|nessuno|doesn't|don't|didn't|isn't|wasn't|hasn't|haven't|hadn't|none|nor|"
    r"sin|ningun|ninguna|nunca|nada de|sans|pas|jamais|aucun|aucune|rien|kein|keine|keinen|keiner|ohne|nie|niemals|nicht|nichts|"
    r"nao|sem|nenhum|nenhuma|senza|mai|nessun|nessuna|niente|nemmeno|geen|zonder|niet|nooit)\s+"
    # at most two words between, and no "and" or "but": "voelt zijn voet niet en het doet pijn" is pain
    r"(?:(?!(?:and|en|y|et|und|e|but|pero|mais|aber|maar|ma)\s)\S+\s+){0,2}$",
    _FLAGS,
)
# Said of the past: a year, "x years ago", "last year", "history of".
_HISTORY: Final = re.compile(
    r"(?:\b(?:in|since|en|em|nel|im|in het|de|desde|depuis|seit|sinds|dal|back in)\s+(?:19|20)\d\d\b|\b(?:19|20)\d\d\b|"
    r"\b(?:\d+|a|one|two|three|four|five|six|several|few|many|some)\s+(?:years?|yrs?|months?|decades?)\s+ago\b|"
    r"\b(?:[2-9]|two|three|four|five|six|several) weeks ago\b|years ago|\(\d+ ?(?:yrs?|years?)\)|"
    r"\b(?:[2-9]|\d\d|two|three|four|five|six|several) (?:weeks?|months?) out from\b|"
    r"\bsurvivors?\b|\bpost[- ]\w+|\b\d+ (?:months?|years?|weeks?) after\b|\bafter (?:my|his|her|the|a)? ?(?:sepsis|stroke|heart attack|surgery|icu|infarct\w*)\b|"
    r"\b(?:quand j'etais|cuando era|als ich|quando (?:eu )?era|quando ero|toen ik) (?:\w+ )?(?:petit|petite|enfant|jeune|nino|nina|pequen[oa]|joven|klein|kind|jung|crianca|piccol[oa]|bambin[oa]|jong)\b|"
    r"\bback in (?:19|20)\d\d\b|\bwhen i was (?:a )?(?:teen|teenager|student|kid|child|younger)\b|\bin my (?:teens|twenties|youth)\b|"
    r"\blast (?:year|month|summer|winter|spring|autumn|fall|christmas)\b|\bhistory of\b|\bat the time\b|\bvroeger\b|\ba l'epoque\b|\bdamals\b|\ball'epoca\b|\bused to\b|\bin the past\b|"
    r"\bas a (?:child|kid|teenager)\b|\bwhen (?:i|he|she|we) (?:was|were) (?:young|little|a child|a kid|\d+)\b|"
    r"\bsurvived\b|\brecover(?:ed|ing|y)\b|\bsince (?:his|her|my) \w+ (?:in|last)\b|"
    r"\bhace (?:\d+|unos|varios|muchos|un|dos|tres) (?:anos|ano|meses)\b|\bel ano pasado\b|\bantecedentes\b|"
    r"\bil y a (?:\d+|quelques|plusieurs|un|deux|trois|des) (?:ans|an|mois|annees)\b|\b(?:hace|vor|ha) (?:anos|jahren|muitos anos)\b|"
    r"\b(?:anni|jaren|years) (?:fa|geleden|ago)\b|\bl'an(?:nee)? derniere?\b|\bantecedents\b|"
    r"\bvor (?:\d+|einigen|ein paar|einem|zwei|drei|vielen) (?:jahren|jahr|monaten)\b|\bletztes jahr\b|\bvorgeschichte\b|"
    r"\bha (?:\d+|alguns|uns|um|dois|tres) (?:anos|ano|meses)\b|\bano passado\b|\bhistorico de\b|"
    r"\b(?:\d+|alcuni|qualche|un|due|tre) (?:anni|anno|mesi) fa\b|\bl'anno scorso\b|\bin passato\b|"
    r"\b(?:\d+|een paar|enkele|een|twee|drie) (?:jaar|jaren|maanden) geleden\b|\bvorig jaar\b|\bin het verleden\b)",
    _FLAGS,
)
# A research, prevention or general-information clause; also a clause about a population, not a person.
_RESEARCH: Final = re.compile(
    r"(?:\bstud(?:y|ies)\b|\btrials?\b|\bnovel\b|\b(?:novela|romanzo|personaje|personnage|personagem|personaggio|romanfigur)\b|\bstory\b|\bcharacter\b|\bfiction\b|\bexams?\b|\bstudying\b|\bstudents?\b|"
    r"\bnursing\b|\bcourse\b|\blecture\b|\btraining\b|\bdifference between\b|\bread (?:about|that|online)\b|\bi (?:have |'ve )?read\b(?! the)|\b(?:li|lei|j'ai lu|ho letto|ik las|ik heb gelezen|habe (?:\w+ )?gelesen) (?:que|qu'|che|dat|dass)|\bheard (?:about|that)\b|"
    r"\bhow often\b|\b(?:hoe vaak|wie oft|wie haufig|con que frecuencia|a quelle frequence|com que frequencia|quanto spesso|con quale frequenza)\b|\bvaccin\w*|\bjabs?\b|\bimmuni[sz]\w*|\brisks?\b|\brisque|\w*risiko\b|\brischio\b|\brisico\b|\briesgo\b|\brisco\b|"
    r"\b(?:reduce|reducir|reduire|senken|verringern|reduzir|ridurre|verlagen|verminderen)\b|"
    r"\b(?:cuantas personas|combien de personnes|wie viele menschen|quantas pessoas|quante persone|hoeveel mensen)\b|"
    r"\b(?:cada ano|chaque annee|pro jahr|jahrlich|por ano|ogni anno|per jaar|trabajo de la uni|pour un cours)\b|\bresearch\b|\bevidence\b|\bguidelines?\b|meta.?analys|systematic review|"
    r"\bliterature\b|\bpapers?\b|\befficacy\b|\beffectiveness\b|\boutcomes?\b|\bmortality\b|\bincidence\b|\bprevalence\b|"
    r"\bstatistics?\b|\bstats?\b|\bessay\b|\bepidemiolog\w*|\bhow many people\b|\bnumber of (?:people|deaths|cases)\b|\beach year\b|"
    r"\bper year\b|\bleading cause\b|\bwhy (?:is|are|do|does)\b|\bhow common\b|\bprotect(?:s|ive|ion)?\b|\bmore likely\b|\bless likely\b|"
    r"\bmyth\b|\btextbook\b|\bwhy (?:did|do|does|is|are|was)\b|\b(?:por que|porque|pourquoi|warum|perche|waarom)\b|\bwhen should (?:you|i|we|one|people)\b|"
    r"\bprevien\w*|\bprevin\w*|\bvoorkom\w*|\bvorbeug\w*|"
    r"\b(?:hereditaire|hereditari[oa]|erblich|ereditari[oa]|erfelijk|genetic|inherited|runs in (?:the )?famil\w*)\b|"
    r"\bwhat (?:is|does) (?:a |an |the )?'?\w+(?: \w+){0,3}'? (?:mean|look like)\b|\blook like\b|\bq(?:ue)? es (?:el|la|un|una)\b|\bqu'est.ce que\b|"
    r"\bwas (?:ist|bedeutet)\b|\bo que (?:e|significa)\b|\bche cos'e\b|\bwat (?:is|betekent)\b|\bsignifica\b|\bmeaning\b|"
    r"\bfor (?:the )?future\b|\bjust (?:want|wanted) to know\b|\bjust in case\b|\bknown (?:thing|side effect|complication)\b|"
    r"\b(?:a (?:bit|little|tiny bit|small amount|lick|drop|dab)) of\b|\bpea.sized\b|\btiny amount\b|\bdiferen\w* entre\b|\bdifference\b|\bestudando\b|"
    r"\b(?:prova|examen|prufung|esame|tentamen|documental|documentaire|documentary|dokumentation|documentario|doku|docu|osce|"
    r"simulacro|(?:examen|simulacro|pregunta) (?:del )?mir)\b|"
    r"\w*(?:preventie|pravention|prevention|prevencion|prevencao|prevenzione)\b|"
    # a clause that only asks what a condition is: "what is neutropenic sepsis?"
    r"^\s*(?:what(?:'s| is| are)|c'est quoi|qu'est.ce qu(?:e|'une?)|que es|was ist|o que e|che cos'e|wat is) (?:(?:a|an|the|un|une|"
    r"la|le|el|ein|eine|de|het|o|il|lo) )?(?:\w+ ){0,2}\w+\s*$|"
    r"\b(?:safety plan|plan de seguridad|plan de securite|sicherheitsplan|plano de seguranca|piano di sicurezza|"
    r"veiligheidsplan|differenza|diferencia|diferenca|unterschied|verschil)\b|"
    r"\b(?:hotlines?|helplines?|crisis lines?|volunteer\w*|voluntari[oa]|vrijwillig\w*|benevole|ehrenamt\w*|werkstuk|referat|"
    r"hausarbeit|tesina|homework|school project|spreekbeurt|thesis|dissertation|(?:mon|un|ce|le) memoire|tesis|tese|tesi|scriptie|tfg|tcc|"
    r"bachelorarbeit|masterarbeit|trabajo (?:para|de) la (?:uni|universidad|facultad)|trabalho da faculdade)\b|\bwhen (?:i|he|she|we) (?:run|exercise|work out|jog|train|play sport|do sport)\b|\b(?:is|are) (?:\w+ ){1,5}common\b|\b(?:less|lower|higher|more|increased|reduced|any) (?:\w+ )?risk\b|\bhow successful\b|"
    r"\bsuccess rates?\b|\bvictims\b|\bwhat (?:should|do|must) (?:we|i|you|people) (?:know|do) about\b|\badvice\b|\btips\b|"
    r"\bgoing (?:trekking|hiking|camping|travell?ing)\b|\bbefore (?:a|our|my|the) (?:trip|holiday|flight)\b|\bpreven(?:t|ts|tion|ting|tive)\b|\brisk factors?\b|\b(?:reduce|lower|raise|increase)s? "
    r"(?:the )?risk\b|\brisk of\b|\brates?\b|\b(?:fatores de (?:protecao|risco)|factores de (?:proteccion|riesgo)|facteurs de (?:protection|risque)|schutzfaktoren|fattori (?:di )?(?:protezione|rischio)|beschermende factoren|estudante|estudiante|etudiant\w*|studente|studentin)\b|\b(?:taxas?|tasas?|taux|tass[oi]) (?:de|di|du|des)\b|\bimprove (?:recovery|survival|outcomes?)\b|\b(?:keep|stop) (?:\w+ ){1,3}(?:from )?(?:ever|getting|having|falling|tripping)\b|\bscreening\b|\b(?:make|making) (?:the |my |our |his |her )?(?:house|home|flat|apartment|kitchen|place|garden) (?:\w+ )?safer?\b|\b(?:child|baby).?proof\w*|"
    r"\b(?:can|does|do|could|might|may|will) (?:\w+ ){0,3}(?:cause|trigger|lead to|increase|reduce|improve|help)\b|"
    r"\bside.?effects?\b|\bwarnings\b|\b(?:leaflet|package insert|prospecto|notice|beipackzettel|packungsbeilage|bula|bugiardino|bijsluiter)\b|\blinked (?:to|with)\b|\bassociated with\b|\bwhat (?:are|is) (?:the )?(?:early |warning |common |typical )?"
    r"(?:signs?|symptoms?)\b|\bsigns? (?:and symptoms )?of\b|\bsymptoms of\b|\bhow (?:do|can|would) (?:you|i|we|one|people) "
    r"(?:tell|know|recogni[sz]e|spot)\b|\bwarning signs?\b|\bwhat (?:happens|causes)\b|\bin general\b|\bpeople (?:who|with)\b|"
    r"\bpatients (?:who|with)\b|\bchildren (?:who|with)\b|"
    r"\b(?:riesgo|risque|risiko|risco|rischio|risico)s? (?:de|di|del|van|fur|von|du|des)\b|"
    r"\bestudios?\b|\bensayos?\b|\binvestigacion\b|\bevidencia\b|\bprevenir\b|\bprevencion\b|\bsintomas de\b|\bsenales de\b|"
    r"\betudes?\b|\bessais?\b|\brecherche\b|\bprevenir\b|\bprevention\b|\bsymptomes de\b|\bsignes de\b|"
    r"\bstudien?\b|\bforschung\b|\bevidenz\b|\bleitlinien?\b|\bvorbeug\w*|\bpravention\b|\bsymptome (?:von|eines|einer)\b|"
    r"\bestudos?\b|\bensaios?\b|\bpesquisas?\b|\bprevencao\b|\bsintomas de\b|\bsinais de\b|"
    r"\bstudi\b|\bstudio\b|\bricerca\b|\bprevenire\b|\bprevenzione\b|\bsintomi (?:di|del|della)\b|\bsegni di\b|"
    r"\bstudies\b|\bonderzoek\b|\bbewijs\b|\brichtlijn\w*|\bvoorkomen\b|\bpreventie\b|\bsymptomen van\b|\btekenen van\b)",
    _FLAGS,
)
# A whole message set in an exam, a story or a school task ("OSCE prep: 2 yr old, 40C fever, non-blanching
# rash ..."): its emergency words describe nobody's situation, unless it also says *now*.
_FRAME: Final = re.compile(
    r"\b(?:osce|(?:for|in) (?:my|the|an|our|a) (?:\w+ )?exams?(?! room)|exam (?:prep|question|revision|tomorrow|next week)|"
    r"examen|exame|esame|tentamen|prufung|partiel|nursing (?:school|student|exam)|paramedic (?:exam|course|student|school)|"
    r"writing (?:a|an|my) (?:\w+ )?(?:novel|book|script|screenplay)|(?:my|the|a) novel (?:where|about|in which)|in (?:my|the|a) novel|short story|(?:a|my) story (?:where|about|"
    r"in which)|writing a story|(?:in|on) (?:the|a) (?:film|movie|show|series|tv)|tv (?:show|drama|series)|grey's|textbook|"
    r"homework|essay|poster|science fair|coursework|hausarbeit|masterarbeit|bachelorarbeit|thesis|dissertation|tfg|tesis|pflegeschule|tcc|tesi|scriptie|referat|werkstuk|"
    r"spreekbeurt|romanzo|novela|documentar\w*|doku\w*|revising|je revise|"
    # a school or university paper in the other languages ("un trabajo de bachillerato")
    r"(?:trabajo|trabalho|travail|ricerca|tesina) (?:de|da|do|para|pour|per) (?:la |el |a |o |l'|il )?"
    r"(?:clase|bachillerato|escuela|colegio|instituto|uni\w*|facultad|faculdade|escola|ecole|classe|lycee|fac|scuola|liceo))\b",
    _FLAGS,
)
# A story dated after it is told ("crushing chest pain, grey and sweaty ... that was my dad in March"): what
# came before is history, unless its own sentence says *now*.
_DATED_AFTER: Final = re.compile(
    r"\b(?:that|this|it|all that|all this) (?:was|happened) (?:\w+ ){0,3}(?:in (?:19|20)\d\d|in (?:january|february|march|april|may|"
    r"june|july|august|september|october|november|december)|last (?:month|year|summer|winter|spring|autumn)|"
    r"(?:\d+|two|three|four|five|six|a few|several) (?:weeks|months|years) ago|back in)\b|"
    r"\bc'etait (?:en (?:19|20)\d\d|il y a \d+ (?:mois|ans)|le mois dernier|l'an dernier)|\bdas war (?:im (?:jahr|\w+ (?:19|20)\d\d)|vor \d+ "
    r"(?:monaten|jahren)|letzten? (?:monat|jahr))|\b(?:eso )?fue (?:en (?:19|20)\d\d|hace \d+ (?:meses|anos)|el (?:mes|ano) pasado)|"
    r"\b(?:isso )?foi (?:em (?:19|20)\d\d|ha \d+ (?:meses|anos)|no (?:mes|ano) passado)|\b(?:e )?successo (?:nel (?:19|20)\d\d|\d+ "
    r"(?:mesi|anni) fa|il mese scorso|l'anno scorso)|\bdat was (?:in (?:19|20)\d\d|\d+ (?:maanden|jaar) geleden|vorige maand|vorig jaar)",
    _FLAGS,
)
_OPENING: Final = re.compile(r"[\W_]*")
# "If", "in case": asked about a situation, not in one.
_HYPOTHETICAL: Final = re.compile(
    r"(?<!comme )(?<!como )(?<!come )(?<!as )\b(?:if|what if|in case|keep (?:picturing|imagining)|one day|someday|some day|un dia|"
    r"un jour|eines tages|um dia|un giorno|op een dag|suppose|supposing|should (?:\w+ ){1,3}ever|whether|si(?= (?:je|j'|tu|il|elle|on|nous|vous|ils|elles|yo|el|ella|mi|mis|mon|ma|mes|usted|alguien|quelqu'un|alguna vez|un jour|jamais)\b)|se (?:um dia|algum dia|mai)\b|als (?:ooit|er ooit)\b|en caso de|au cas ou|en cas de|wenn|falls|"
    r"caso|nel caso|qualora|indien|mocht|stel dat)\b(?!.*\b(?:now|right now|currently|ahora|maintenant|jetzt|agora|adesso|ora|nu)\b)",
    _FLAGS,
)
# Someone else's disclosure imagined, to prepare for it: "if my son ever tells me he is thinking of suicide,
# what do I say?". The one hypothetical that excuses self-harm: the subject is not the writer ("if I told you
# I wanted to die" is how such thoughts are often put) and the words are told *to* the writer.
_IF_TOLD: Final = re.compile(
    r"\b(?:if|what if|should|suppose) (?:ever |one day |someday )?(?:a |my |our |one of my )(?:\w+ ){0,3}(?:ever )?"
    r"(?:tells?|told|says?|said|confides?|confided|admits?|admitted) (?:me|us)\b|"
    r"\bsi (?:algun dia |alguna vez |un jour |jamais )?(?:un |una |mi |mis |mon |ma |mes )(?:\w+ ){0,3}(?:me|nos|m'|nous) ?"
    r"(?:dice|dijera|dijese|cuenta|contara|confiesa|dit|disait|confie|avoue|raconte)\b|"
    r"\bse (?:um dia |algum dia |un giorno |mai )?(?:o |a |meu |minha |un |una |mio |mia |il |la )(?:\w+ ){0,3}(?:me|nos|mi|ci) ?"
    r"(?:disser|dizer|contar|diz|dice|dicesse|confida|confidasse|racconta)\b|"
    r"\b(?:wenn|falls) (?:mir |uns )?(?:\w+ ){0,4}(?:mir |uns )(?:\w+ ){0,4}(?:sagt|sagen wurde|erzahlt|anvertraut)\b|"
    r"\b(?:als|stel dat) (?:ooit |er ooit )?(?:een |mijn |onze )(?:\w+ ){0,3}(?:me|mij|ons) (?:\w+ ){0,2}(?:zegt|vertelt|zou zeggen|zou vertellen)\b",
    _FLAGS,
)
# A clause saying *now* keeps its cue against general-question wording ("what is this chest pain, it started an
# hour ago"); history wording still excuses it: "and now" starts a new clause.
_NOW: Final = re.compile(
    r"\b(?:now|right now|just now|currently|at the moment|again|tonight|today|this (?:morning|evening|afternoon|week)|"
    r"for the (?:last|past) (?:\d+|few|couple of|two|three) (?:hours?|days?|minutes?)|since (?:this|last night|yesterday|\d)|"
    r"ahora|ahorita|hoy|esta (?:manana|noche|tarde)|desde (?:esta|ayer|hace)|de nuevo|otra vez|maintenant|aujourd'hui|ce (?:matin|soir)|"
    r"depuis (?:ce|hier|\d)|encore|a nouveau|jetzt|gerade|heute|seit (?:heute|gestern|\d)|wieder|agora|hoje|esta (?:manha|noite)|"
    r"desde (?:ontem|hoje)|de novo|outra vez|adesso|ora\b|oggi|stamattina|stasera|da (?:ieri|stamattina|\d)|di nuovo|ancora|"
    r"\bnu\b|vandaag|vanochtend|vanavond|sinds (?:gisteren|vanochtend|vannacht|\d)|weer|opnieuw)\b",
    _FLAGS,
)


# Self-harm told as over and the writer well now (batches 4-17's false alarms: "I attempted suicide as a
# teenager ... I'm 34 now and doing fine, are laser treatments any good for the scars"): a statement of being
# well, a time in the past, and nothing that says it is back. Read over the whole message, never alone: the
# urgency model must find the message unlikely urgent too (see app.safety.counted). On dev no urgent item of
# 2,000 says all three.
_WELL_NOW: Final = re.compile(
    r"\b(?:i'm|i am|i've been|i have been|been|she's|he's|she is|he is|she has been|he has been|they're|doing) "
    r"(?:(?:now|honestly|really|so|much|very|totally|completely|actually|pretty|doing) ){0,3}(?:well|fine|good|stable)\b"
    r"(?! (?:at|with|about|enough))|\bin a (?:\w+ )?good place\b|\bno (?:thoughts|urges|ideas) like that\b|\bnone since\b|"
    r"\bclean (?:for )?\w+ (?:years?|months?)\b|\bhaven't (?:done it|self.harmed|had (?:those|any|such) thoughts)\b|"
    r"\bbeen well for\b|\b(?:self.?harm|sh|cutting|suicide attempt) free\b|\bno (?:more )?(?:thoughts|urges) (?:of|about) (?:hurting|harming|killing)\b|\b(?:i'm|i am) doing (?:\w+ ){0,2}better\b|\b(?:estoy|esta|estamos) (?:\w+ ){0,2}(?:bien|estable)\b|\bme (?:siento|encuentro) (?:\w+ )?bien\b|"
    r"\b(?:je vais|il va|elle va) (?:\w+ )?bien\b|\bje suis (?:\w+ )?(?:stabilise|stable)\w*|"
    r"\b(?:es geht (?:mir|ihm|ihr) (?:\w+ )?gut|mir geht es (?:\w+ )?gut|bin (?:\w+ )?stabil)\b|"
    r"\b(?:estou|eu to|to) (?:\w+ ){0,2}(?:bem|estavel)\b|\bme sinto (?:\w+ )?bem\b|\b(?:sto|sta|stiamo) (?:\w+ )?bene\b|"
    r"\bsono stabile\b|\bhet gaat (?:\w+ )?goed\b|\bik ben (?:nu )?(?:\w+ )?stabiel\b|\bklachtenvrij\b|\bllevo (?:mas de )?\S+ anos bien\b",
    _FLAGS,
)
_LONG_AGO: Final = re.compile(
    r"\b(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|several|many|few) (?:years?|yrs?) (?:ago|since|now)\b|"
    r"\byears ago\b|\b(?:\d+|two|three|four|five|six|several|many) (?:years?|yrs?) (?:self.?harm|sh|clean|free)\b|\b(?:in|since|back in) (?:january|february|march|april|may|june|july|august|september|october|november|december)\b|\bas a (?:teen|teenager|kid|child|student)\b|\bin my (?:early |late |mid )?(?:teens|twenties|20s|30s|youth)\b|"
    r"\ba los \d+\b|\bllevo (?:mas de )?\d+ anos\b|\bvroeger\b|\bal jaren\b|\brond mijn \d+|"
    r"\bwhen i was (?:\d+|a teen\w*|younger|at uni)\b|\b(?:back in|in|since) (?:19|20)\d\d\b|\bat \d\d\b|\blast year\b|"
    r"\bfor (?:\d+|two|three|four|five|six|many|several) years\b|\bhace (?:\d+|\w+) anos\b|\bcon \d+ anos\b|"
    r"\bil y a \d+ ans\b|\bquand j'avais\b|\bdepuis \d+ ans\b|\bvor \d+ jahren\b|\bals ich \d+\b|\bha (?:mais de )?\d+ anos\b|"
    r"\baos \d+ anos\b|\b\d+ anni fa\b|\bda adolescente\b|\ba \d+ anni\b|\b\d+ jaar geleden\b|\btoen ik \d+\b|\bsinds \d+ jaar\b",
    _FLAGS,
)
_BACK: Final = re.compile(
    r"\b(?:lately|recently|this week|tonight|last night|yesterday|today|right now|rn|again|come back|coming back|back|"
    r"still (?:think|have|get|want)|relapse\w*|ready|(?<!safety )plan|planning|decided|anniversary|goodbye)\b",
    _FLAGS,
)


def told_as_over(question: str) -> bool:
    """Whether ``question`` tells of self-harm or suicidal thoughts as over: the writer says they are well
    now, says when it was, and says nothing of it coming back."""
    text = normalise(question)
    return bool(_WELL_NOW.search(text) and _LONG_AGO.search(text) and not _BACK.search(text))


@dataclass(frozen=True, slots=True)
class Finding:
    """One red flag that counted: its condition and kind, and where its cue starts in the folded text."""

    condition: str
    kind: Kind
    at: int


_CONTRACTION: Final = re.compile(
    r"\b(can|don|won|isn|doesn|didn|hasn|haven|wasn|weren|couldn|aren|wouldn|shouldn)t\b"
)
_SUBJECT_IS: Final = re.compile(r"\b(he|she|it|that|what)s\b")


def normalise(text: str) -> str:
    """Accents folded, lower case, typographic apostrophes and spaces made plain, chat spelling of
    contractions restored ("cant" -> "can't", "shes" -> "she's"): what the patterns expect."""
    text = fold_accents(text).lower().replace("ß", "ss")
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = _CONTRACTION.sub(r"\1't", text)
    text = _SUBJECT_IS.sub(r"\1's", text)
    text = re.sub(r"\bim\b", "i'm", text)
    text = re.sub(r"\bive\b", "i've", text)
    return re.sub(r"\s+", " ", text)


@functools.lru_cache(maxsize=128)
def _bounds(text: str, boundary: re.Pattern[str]) -> tuple[list[int], list[int]]:
    """Where the clauses (or sentences) of ``text`` start and end (one pass per text and ``boundary``, shared
    by every cue in it)."""
    starts, ends = [0], []
    for m in boundary.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    return starts, ends


def _span(text: str, start: int, end: int, boundary: re.Pattern[str] = _CLAUSE) -> tuple[str, int]:
    """The clause (or, with ``_SENTENCE``, the sentence) holding ``text[start:end]`` and its start offset."""
    starts, ends = _bounds(text, boundary)
    i = bisect.bisect_right(starts, start) - 1
    j = bisect.bisect_left(ends, end)
    left, right = starts[i], ends[min(max(j, i), len(ends) - 1)]
    return text[left:right], left


@functools.lru_cache(maxsize=4096)
def _told_otherwise(clause: str) -> tuple[bool, bool]:
    """Whether ``clause`` tells of the past, and whether it asks a research or general question (not now)."""
    research = _NOW.search(clause) is None and _RESEARCH.search(clause) is not None
    return _HISTORY.search(clause) is not None, research


@functools.lru_cache(maxsize=64)
def _framed(text: str) -> bool:
    """The whole message is set in an exam, a story or a school task, and says nothing of *now*."""
    return _FRAME.search(text) is not None and _NOW.search(text) is None


def _dated_next(text: str, sentence_end: int) -> bool:
    """The sentence after the one ending at ``sentence_end`` opens by dating it ("... on the kitchen floor.
    That was my dad in March"); a date further on may be another event's, so only the next sentence's start."""
    opening = _OPENING.match(text, sentence_end)
    return opening is not None and _DATED_AFTER.match(text, opening.end()) is not None


def _excused(kind: Kind, text: str, start: int, end: int) -> bool:
    """Whether the cue at ``text[start:end]`` is not happening now: by its own clause; an emergency's also
    by an "if" earlier in its sentence ("if he ever falls on his warfarin, hits his head and ...") or by the
    frame of the whole message (:data:`_FRAME`), when neither says *now*."""
    clause, left = _span(text, start, end)
    if _NEGATION.search(text[max(left, start - 40) : start]):
        return True
    if kind == "lethal_means":
        return False  # however it is phrased, a request for means gets the guidance
    history, research = _told_otherwise(clause)
    opened = text.rfind("(", 0, start)
    if not history and opened > 0 and ")" not in text[opened:start]:
        # a bracket is an aside to the clause before it: "3 weeks out from a concussion (hit my head ...)"
        history = _told_otherwise(_span(text, opened - 1, opened)[0])[0]
    if history:
        return True
    # "If I wasn't here" is how thoughts of suicide are often put: no hypothetical excuses self-harm, but for
    # another's disclosure imagined just before the cue (_told_if).
    if kind != "self_harm" and _HYPOTHETICAL.search(clause[: start - left]):
        return True
    if kind == "self_harm" and _told_if(text, clause, start, end):
        return True
    if research or kind != "emergency":
        return research
    # Research wording stays local to the clause: "crushing chest pain, is there a risk with aspirin?".
    sentence, first = _span(text, start, end, _SENTENCE)
    if _NOW.search(sentence):
        return False
    if _dated_next(text, first + len(sentence)):
        return True
    # History is not carried: "operada del intestino hace años, lleva 2 dias sin ... vomitando" is now.
    if _HYPOTHETICAL.search(sentence[: start - first]):
        return True
    return _framed(text)


# The message asks what to say or do in answer: a helper preparing, not a crisis told.
_HOW_TO_RESPOND: Final = re.compile(
    r"\b(?:what (?:should|do|would|could|can) (?:i|we) (?:say|do|tell)|(?:right|best|wrong) (?:thing|things|way) to "
    r"(?:say|do|respond|react)|how (?:should|do|would|can|could) (?:i|we) (?:respond|react|help|answer|handle|support)|"
    r"que (?:deberia|debo|tengo que|puedo) (?:decir|hacer)|como (?:deberia|debo|puedo) (?:reaccionar|responder|ayudar)|"
    r"como (?:eu )?(?:devo|deveria|posso) (?:reagir|responder|ajudar|agir)|o que (?:eu )?(?:devo|deveria|posso) (?:dizer|fazer)|"
    r"que (?:dois|devrais|faut)(?:-je|-il)? (?:lui )?(?:dire|faire|repondre|reagir)|comment (?:reagir|repondre|l'aider|aider)|"
    r"was (?:soll|sollte|kann) ich (?:\w+ )?(?:sagen|tun|machen)|wie (?:soll|sollte|kann) ich (?:\w+ )?(?:reagieren|helfen|antworten)|"
    r"cosa (?:devo|dovrei|posso) (?:\w+ )?(?:dire|fare)|come (?:devo|dovrei|posso) (?:reagire|rispondere|aiutar)|"
    r"wat (?:moet|kan|zou) ik (?:\w+ )?(?:zeggen|doen)|hoe (?:moet|kan|zou) ik (?:\w+ )?(?:reageren|helpen))",
    _FLAGS,
)
_THAT: Final = re.compile(r", (?:dass|que|qu'|that|dat|che)\b")
_CLAUSE_MARK: Final = re.compile(r"[,;:]|\b(?:and|but|y|pero|et|mais|und|aber|e|mas|ma|maar)\b")


def _told_if(text: str, clause: str, start: int, end: int) -> bool:
    """Another's disclosure imagined (:data:`_IF_TOLD`) before the cue, in its clause or in the clause its
    own ", that" opens ("wenn mir mein Sohn sagt, dass er ..."), and nothing said of *now* in the cue's
    ``clause``."""
    sentence, first = _span(text, start, end, _SENTENCE)
    before = sentence[: start - first]
    told = list(_IF_TOLD.finditer(before))
    if not told or _NOW.search(clause) or not _HOW_TO_RESPOND.search(text):
        return False
    gap = _THAT.sub(" ", before[told[-1].end() :])
    return not _CLAUSE_MARK.search(gap)


def _counts(
    flag: RedFlag, cue: re.Pattern[str], groups: tuple[re.Pattern[str], ...], text: str
) -> int | None:
    """The offset of the first cue of ``flag`` that counts, or None."""
    for group in groups:  # each companion must be said, not denied ("no fever")
        if not any(
            not _NEGATION.search(text[max(0, m.start() - 40) : m.start()]) for m in group.finditer(text)
        ):
            return None
    for m in cue.finditer(text):
        if not _excused(flag.kind, text, m.start(), m.end()):
            return m.start()
    return None


def _signs(signs: dict[str, re.Pattern[str]], kind: Kind, text: str) -> dict[str, int]:
    """The sign categories said of now in ``text``, each with where its first counted mention starts."""
    said: dict[str, int] = {}
    for name, pattern in signs.items():
        for m in pattern.finditer(text):
            if not _excused(kind, text, m.start(), m.end()):
                said[name] = m.start()
                break
    return said


def _by_signs(text: str) -> list[Finding]:
    """Urgency from warning signs when no red flag named the condition (see :mod:`app.safety._signs`)."""
    found = []
    danger = _signs(_EMERGENCY_SIGNS, "emergency", text)
    if danger.keys() & EMERGENCY_STRONG or (len(danger) >= 2 and danger.keys() & _MAJOR_SIGNS):
        found.append(Finding("warning_signs", "emergency", min(danger.values())))
    risk = _signs(_SELF_HARM_SIGNS, "self_harm", text)
    if risk.keys() & SELF_HARM_STRONG or len(risk) >= 2:
        found.append(Finding("suicide_warning_signs", "self_harm", min(risk.values())))
    return found


# A body temperature as written: 37.2, 36,9 (Celsius with a decimal, or whole with a unit), 98.6 F.
_CELSIUS: Final = re.compile(
    r"\b(3[4-9]|4[0-2])(?:[.,](\d)\b|(?=\s*(?:°|c\b|degrees|grad|graus|gradi|graden)))"
    r"(?!\s*(?:\+|weeks|wks|semana|semaine|settiman|woche|weken|kg|mg|ml|%|years|anos|ans|jahr|anni|jaar))"
)
_FAHRENHEIT: Final = re.compile(r"\b(9[4-9]|10[0-7])(?:[.,](\d))?\s*(?:°\s*)?f\b")
_FEVER_WORDS: Final = re.compile(FEVER, _FLAGS)


def _afebrile(text: str) -> bool:
    """Every body temperature the message gives is normal (36.0-37.4 °C, 96.8-99.4 °F): "burning up ... ok I
    checked, 37.2" is no fever. One reading of fever, or of a low temperature (a cold baby), and it is not."""
    readings = [float(f"{m[1]}.{m[2] or 0}") for m in _CELSIUS.finditer(text)]
    readings += [(float(f"{m[1]}.{m[2] or 0}") - 32) / 1.8 for m in _FAHRENHEIT.finditer(text)]
    return bool(readings) and all(36.0 <= t < 37.5 for t in readings)


def detect(question: str) -> list[Finding]:
    """Every red flag that counts in ``question``, most pressing kind first (self-harm, means, emergency)."""
    text = normalise(question)
    if _afebrile(text):  # the fever words are the worry the reading answers; offsets kept
        text = _FEVER_WORDS.sub(lambda m: " " * len(m[0]), text)
    found = []
    for flag, cue, groups in _COMPILED:
        at = _counts(flag, cue, groups, text)
        if at is not None:
            found.append(Finding(flag.condition, flag.kind, at))
    found.extend(_by_signs(text))
    return sorted(found, key=lambda f: (_PRIORITY[f.kind], f.at))
