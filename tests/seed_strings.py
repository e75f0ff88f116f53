"""The seed page's Chinese strings, byte for byte: the contract the zh_CN catalog keeps."""

WAKE_PROMPT = "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)"
NEW_TASK_PROMPT = "要做什么? 一句话就够,回车开始(Ctrl-C 退出)"

WAKE_PROMPT_EN = (
    "Carry on? Enter = carry on; or say something new; /new = start something else (Ctrl-C quits)"
)
NEW_TASK_PROMPT_EN = "What should I do? One sentence is enough, Enter starts (Ctrl-C quits)"
